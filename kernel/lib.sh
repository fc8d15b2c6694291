# kernel/lib.sh - shared by kernel/ci-compile-check and kernel/build-and-boot (bash,
# sourced): where the 6.1 sources come from, where trees are cached, and the steps
# that unpack a tree, apply the series and configure the guest kernel.
#
# Trees live outside the repository, in $KERNEL_CACHE (default
# ${VCMALLOC_CACHE:-$HOME/.cache/vcmalloc}/kernel-build). Each step leaves a stamp in
# the tree so that reruns only redo what changed.

kernel_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
series_dir=$kernel_dir/patches/6.1
guest_config=$kernel_dir/config/guest.config
source_tarball=${KERNEL_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
KERNEL_CACHE=${KERNEL_CACHE:-${VCMALLOC_CACHE:-$HOME/.cache/vcmalloc}/kernel-build}

die() {
	echo "$(basename "$0"): $*" >&2
	exit 1
}

# The series, in order, as absolute paths.
series_files() {
	local p
	while read -r p; do
		case "$p" in '' | '#'*) continue ;; esac
		echo "$series_dir/$p"
	done <"$series_dir/series"
}

# unpack_tree DIR: a pristine 6.1 tree in DIR (kept if already there).
unpack_tree() {
	local dir=$1
	[ -f "$dir/.vcmalloc-unpacked" ] && return 0
	[ -r "$source_tarball" ] ||
		die "$source_tarball missing (apt-get install linux-source-6.1)"
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "unpacking $source_tarball into $dir"
	nice -n 10 tar -xJf "$source_tarball" -C "$dir" --strip-components=1 ||
		die "unpacking failed"
	touch "$dir/.vcmalloc-unpacked"
}

# apply_series DIR: DIR gets exactly the current series, applied without fuzz. A
# series applied earlier is reverted first (from the copy kept in the tree), so an
# incremental build sees only the files that changed.
apply_series() {
	local dir=$1 applied=$1/.vcmalloc-series p
	if [ -d "$applied" ]; then
		if diff -r -q "$applied" "$series_dir" >/dev/null 2>&1; then
			return 0
		fi
		echo "reverting the previously applied series in $dir"
		for p in $(tac "$applied/series"); do
			patch -d "$dir" -p1 -R -s --fuzz=0 <"$applied/$p" ||
				die "cannot revert $p; remove $dir to start afresh"
		done
		rm -rf "$applied"
	fi
	for p in $(series_files); do
		echo "applying $(basename "$p")"
		patch -d "$dir" -p1 -s --fuzz=0 --forward <"$p" ||
			die "$(basename "$p") does not apply cleanly to $dir"
	done
	cp -r "$series_dir" "$applied"
}

# configure_tree DIR: tinyconfig plus config/guest.config, then a check that every
# option asked for is in the result (a typo or an unmet dependency would drop it).
configure_tree() {
	local dir=$1 line opt val
	if [ ! -f "$dir/.config" ]; then
		nice -n 10 make -C "$dir" -s tinyconfig >/dev/null || die "make tinyconfig failed"
	fi
	(cd "$dir" && scripts/kconfig/merge_config.sh -m .config "$guest_config" >/dev/null &&
		nice -n 10 make -s olddefconfig >/dev/null) || die "configuring $dir failed"
	while read -r line; do
		case "$line" in
		CONFIG_*=*)
			opt=${line%%=*} val=${line#*=}
			grep -qx "$opt=$val" "$dir/.config" || die "$dir/.config lacks $opt=$val"
			;;
		'# CONFIG_'*' is not set')
			opt=${line#\# }
			opt=${opt%% *}
			grep -q "^$opt=" "$dir/.config" && die "$dir/.config has $opt set"
			;;
		esac
	done <"$guest_config"
	return 0
}

# touched_objects DIR: the .o targets that compile the .c files the series touches.
# A file of kernel/sched/ that one of the build_*.c files #includes is compiled
# as part of that file.
touched_objects() {
	local dir=$1 f unity
	cat $(series_files) | sed -n 's|^+++ b/\(.*\.c\)$|\1|p' | sort -u | while read -r f; do
		unity=
		case "$f" in
		kernel/sched/*)
			unity=$(grep -l "^# *include \"$(basename "$f")\"" "$dir"/kernel/sched/build_*.c |
				head -n 1)
			;;
		esac
		if [ -n "$unity" ]; then
			echo "kernel/sched/$(basename "${unity%.c}").o"
		else
			echo "${f%.c}.o"
		fi
	done | sort -u
}
