# tests/vm/lib/initramfs.sh - build a guest initramfs from a staging directory.
# Sourced by run-guest; bash only.
#
# The staging tree mirrors the guest's root. Invariants kept by these functions:
# - Every ELF file placed with stage_copy* has all its shared libraries staged at the
#   absolute host path that ldd resolved, plus the dynamic loader, so programs run in
#   the guest exactly as they were resolved on the host (no ld.so.cache is needed:
#   the loader's default directories hold every library).
# - Host symlinks are followed: the guest gets plain files at the requested paths.
# - A library that ldd cannot find is an error, never a silent omission.
#
# Another architecture's guest (run-guest --arch arm64) sets, before stage_init:
#   STAGE_BUSYBOX      that architecture's busybox-static,
#   STAGE_BUSYBOX_RUN  how to run it here (qemu-user) to list its applets,
#   STAGE_SYSROOT      the cross C library's root (/usr/aarch64-linux-gnu): ldd cannot
#                      load foreign ELF files, so their libraries are found from
#                      their DT_NEEDED entries in their RUNPATH and in
#                      STAGE_SYSROOT/lib, and staged in the guest's /lib (the
#                      loader's default directory).
#
# Functions set STAGE_ERROR and return 1 on failure.

STAGE_BUSYBOX=${STAGE_BUSYBOX:-/bin/busybox}
STAGE_BUSYBOX_RUN=${STAGE_BUSYBOX_RUN:-}
STAGE_SYSROOT=${STAGE_SYSROOT:-}
STAGE_ROOT=
declare -A STAGE_DONE=()

stage_fail() {
	STAGE_ERROR=$*
	return 1
}

# stage_init DIR: start an empty guest root with busybox-static and its applet links.
stage_init() {
	STAGE_ROOT=$1
	STAGE_DONE=()
	local busybox=$STAGE_BUSYBOX
	[ -f "$busybox" ] || stage_fail "no $busybox (install busybox-static)" || return 1
	# A dynamically linked busybox would need the host's libc in the guest before
	# /init can run; busybox-static has no dependencies.
	if LC_ALL=C readelf -l "$busybox" 2>/dev/null | grep -q 'INTERP'; then
		stage_fail "$busybox is dynamically linked (install busybox-static)" || return 1
	fi
	mkdir -p "$STAGE_ROOT"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,root,etc,vm/bin,vm/cmd}
	cp "$busybox" "$STAGE_ROOT/bin/busybox"
	chmod 755 "$STAGE_ROOT/bin/busybox"
	local applet applets
	applets=$($STAGE_BUSYBOX_RUN "$busybox" --list) && [ -n "$applets" ] ||
		stage_fail "cannot list the applets of $busybox" || return 1
	for applet in $applets; do
		[ "$applet" = busybox ] && continue
		[ -e "$STAGE_ROOT/bin/$applet" ] || ln -s busybox "$STAGE_ROOT/bin/$applet"
	done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$STAGE_ROOT/etc/passwd"
	echo 'root:x:0:' >"$STAGE_ROOT/etc/group"
}

# is_elf FILE: true if FILE starts with the ELF magic.
is_elf() {
	[ -f "$1" ] && [ "$(od -An -tx1 -N4 "$1" 2>/dev/null | tr -d ' \n')" = 7f454c46 ]
}

# stage_deps_sysroot FILE: stage_deps for a foreign ELF file (STAGE_SYSROOT set).
stage_deps_sysroot() {
	local file=$1 dyn interp name dirs d found
	dyn=$(LC_ALL=C readelf -d "$file" 2>/dev/null) || return 0
	interp=$(LC_ALL=C readelf -l "$file" 2>/dev/null |
		sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
	if [ -n "$interp" ]; then
		[ -e "$STAGE_SYSROOT/lib/$(basename "$interp")" ] ||
			stage_fail "$file wants the loader $interp, not in $STAGE_SYSROOT/lib" || return 1
		stage_file "$STAGE_SYSROOT/lib/$(basename "$interp")" "$interp" || return 1
	fi
	dirs=$(printf '%s\n' "$dyn" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p; s/.*(RPATH).*\[\(.*\)\]$/\1/p' |
		tr ':' '\n' | sed "s#\\\$ORIGIN#$(dirname "$file")#")
	for name in $(printf '%s\n' "$dyn" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
		found=
		for d in $dirs "$STAGE_SYSROOT/lib"; do
			[ -e "$d/$name" ] && found=$d/$name && break
		done
		[ -n "$found" ] || stage_fail "$file needs $name, found neither in its RUNPATH nor in $STAGE_SYSROOT/lib" || return 1
		case "$found" in
		"$STAGE_SYSROOT"/lib/*) stage_file "$found" "/lib/$name" || return 1 ;;
		*) stage_file "$found" "$found" || return 1 ;;
		esac
	done
}

# stage_deps FILE: stage every shared library FILE needs, and the dynamic loader.
stage_deps() {
	local file=$1 out line lib
	is_elf "$file" || return 0
	if [ -n "$STAGE_SYSROOT" ]; then
		stage_deps_sysroot "$file"
		return
	fi
	# ldd exits non-zero for static executables and for objects it cannot load
	# (relocatable .o files): they need nothing.
	out=$(ldd "$file" 2>/dev/null) || return 0
	while IFS= read -r line; do
		case "$line" in
		*"=> not found"*)
			stage_fail "$file needs ${line%% =>*} which ldd cannot find" || return 1
			;;
		*" => /"*)
			lib=${line#*=> }
			lib=${lib% (0x*}
			;;
		*/*" (0x"*)
			# The loader line: "/lib64/ld-linux-x86-64.so.2 (0x...)".
			lib=${line%% (0x*}
			lib=${lib#"${lib%%[![:space:]]*}"}
			;;
		*)
			continue # linux-vdso and "statically linked"
			;;
		esac
		stage_file "$lib" "$lib" || return 1
	done <<<"$out"
}

# stage_file SRC DEST: copy one host file to the guest path DEST (absolute), then stage
# its libraries.
stage_file() {
	local src=$1 dest=$2
	[ -n "${STAGE_DONE[$dest]:-}" ] && return 0
	[ -e "$src" ] || stage_fail "no such file: $src" || return 1
	mkdir -p "$STAGE_ROOT$(dirname "$dest")"
	cp -L --preserve=mode "$src" "$STAGE_ROOT$dest" || stage_fail "cannot copy $src" || return 1
	STAGE_DONE[$dest]=1
	stage_deps "$src"
}

# stage_copy SRC DEST: copy a file or a directory tree to the guest path DEST, staging
# the libraries of every ELF file in it. A DEST ending in / receives SRC by its name.
stage_copy() {
	local src=$1 dest=$2 f rel
	case "$dest" in
	/*) ;;
	*) stage_fail "guest path must be absolute: $dest" || return 1 ;;
	esac
	[ "${dest%/}" != "$dest" ] && dest=$dest$(basename "$src")
	if [ -d "$src" ]; then
		src=$(cd "$src" && pwd)
		while IFS= read -r -d '' f; do
			rel=${f#"$src"}
			if [ -d "$f" ]; then
				mkdir -p "$STAGE_ROOT$dest$rel"
			else
				stage_file "$f" "$dest$rel" || return 1
			fi
		done < <(find -L "$src" \( -type d -o -type f \) -print0)
	else
		stage_file "$src" "$dest"
	fi
}

# stage_build_outputs BUILD_DIR: copy a meson build directory's linked outputs
# (executables and shared libraries, not objects or meson's own state) to the same
# absolute path in the guest, so RUNPATHs and test command lines keep working.
stage_build_outputs() {
	local dir f
	dir=$(cd "$1" 2>/dev/null && pwd) || stage_fail "no build directory $1" || return 1
	[ -f "$dir/build.ninja" ] || stage_fail "$dir is not a meson/ninja build directory" || return 1
	while IFS= read -r -d '' f; do
		is_elf "$f" || continue
		case "$f" in
		*.so | *.so.*) ;;
		*) [ -x "$f" ] || continue ;;
		esac
		stage_file "$f" "$f" || return 1
	done < <(find "$dir" \( -name meson-private -o -name meson-logs -o -name '*.p' \) -prune \
		-o -type f -print0)
}

# stage_pack OUT: write the staging tree as an uncompressed newc cpio archive (the
# guest unpacks it faster than it would decompress it under TCG).
stage_pack() {
	local out=$1
	(cd "$STAGE_ROOT" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) >"$out" ||
		stage_fail "cpio failed" || return 1
}
