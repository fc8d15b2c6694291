#!/bin/sh
# tests/package/package_test.sh SOURCE_DIR BUILD_DIR VERSION - builds the Debian
# packages (debian/) from a copy of the source tree with dpkg-buildpackage, installs
# them, and checks what they ship: the library by its SONAME, vcmalloc active in a
# program preloaded directly and through the installed launcher, programs built
# against the -dev package with pkg-config and with the static archive.
#
# As root the packages are installed for real (apt-get, waiting for the dpkg lock)
# and purged afterwards, leaving the machine as it was; when not root, or when a
# vcmalloc package is already installed (it is not replaced), they are extracted
# into a scratch root with dpkg-deb -x and used from there.
# Exits 77 (skipped) only when dpkg-buildpackage or debhelper is missing.
set -u
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
version=$3
here=$(cd "$(dirname "$0")" && pwd)
packages="libvcmalloc0 libvcmalloc-dev vcmalloc-tools"

for tool in dpkg-buildpackage dpkg-deb dh dh_auto_configure; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "SKIP: $tool not found (Debian packages debhelper and dpkg-dev, see .ci/deps)"
		exit 77
	}
done

work=$(mktemp -d)
installed=""
cleanup()
{
	if [ -n "$installed" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=600 \
			$packages >"$work/purge.log" 2>&1 ||
			{ echo "FAIL: could not purge $packages:"; cat "$work/purge.log"; }
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fail()
{
	echo "FAIL: $*"
	exit 1
}

# step TEXT: say what happens next, with the seconds since the start.
began=$(date +%s)
step()
{
	echo "[$(($(date +%s) - began)) s] $*"
}

# The source tree without version control, build directories and the products of
# an earlier package build in place.
excludes="--exclude=./.git --exclude=./build* --exclude=./obj-* --exclude=./debian/tmp
 --exclude=./debian/.debhelper --exclude=./debian/files --exclude=./debian/*.substvars
 --exclude=./debian/*.debhelper.log --exclude=./debian/debhelper-build-stamp
 --exclude=./debian/libvcmalloc0 --exclude=./debian/libvcmalloc-dev
 --exclude=./debian/vcmalloc-tools"
case $build in
"$src"/*) excludes="$excludes --exclude=./${build#"$src"/}" ;;
esac
step "copying the source tree"
mkdir "$work/vcmalloc"
# shellcheck disable=SC2086 # the exclusions are words
tar -C "$src" -cf - $excludes . | tar -C "$work/vcmalloc" -xf - ||
	fail "could not copy the source tree"

step "building the packages (dpkg-buildpackage -b -us -uc)"
# Check level 2: a symbol exported but missing from debian/libvcmalloc0.symbols
# fails the build, as does one that disappeared (that needs a new SONAME).
(cd "$work/vcmalloc" &&
	DEB_BUILD_OPTIONS="parallel=${TEST_JOBS:-2}" DPKG_GENSYMBOLS_CHECK_LEVEL=2 \
		dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 || {
	tail -n 60 "$work/build.log"
	if grep -q 'dpkg-gensymbols' "$work/build.log"; then
		echo "The exported symbols differ from debian/libvcmalloc0.symbols: add new ones"
		echo "there with the version that introduced them (see the diff above)."
	fi
	fail "dpkg-buildpackage failed"
}
step "built"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
debs=""
for p in $packages; do
	deb="$work/${p}_${version}_$arch.deb"
	[ -f "$deb" ] || fail "no $deb; built: $(ls "$work")"
	debs="$debs $deb"
done

# What each package holds.
contents()
{
	dpkg-deb -c "$work/${1}_${version}_$arch.deb" | awk '{print $6}' | sed 's|^\./|/|'
}
lib=/usr/lib/$multiarch
expect_file()
{
	contents "$1" | grep -qxF "$2" || fail "$1 does not ship $2"
}
expect_file libvcmalloc0 "$lib/libvcmalloc.so.$version"
expect_file libvcmalloc0 "$lib/libvcmalloc.so.0"
expect_file libvcmalloc-dev "$lib/libvcmalloc.so"
expect_file libvcmalloc-dev "$lib/libvcmalloc.a"
expect_file libvcmalloc-dev "$lib/pkgconfig/vcmalloc.pc"
expect_file libvcmalloc-dev /usr/include/vcmalloc.h
expect_file vcmalloc-tools /usr/bin/vcmalloc
expect_file vcmalloc-tools /usr/share/man/man1/vcmalloc.1.gz
if contents libvcmalloc0 | grep -q -e '\.a$' -e '\.h$' -e 'libvcmalloc\.so$'; then
	fail "libvcmalloc0 ships development files: $(contents libvcmalloc0)"
fi
depends=$(dpkg-deb -f "$work/vcmalloc-tools_${version}_$arch.deb" Depends)
case $depends in
*"libvcmalloc0 (= $version)"*) ;;
*) fail "vcmalloc-tools depends on '$depends', not on libvcmalloc0 (= $version)" ;;
esac

# Install, or extract into $root.
root=""
lock="/run/lock/vcmalloc-package-test"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null && command -v flock >/dev/null; then
	# Two runs of this test at once would install and purge under each other.
	exec 9>"$lock"
	flock -w 600 9 || fail "could not take $lock"
	for p in $packages; do
		state=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
		if [ -n "$state" ] && [ "$state" != not-installed ]; then
			echo "$p is on this system ($state): extracting instead of installing"
			root=$work/root
		fi
	done
else
	root=$work/root
fi
if [ -z "$root" ]; then
	step "installing$debs"
	installed=yes
	# shellcheck disable=SC2086 # one word per package
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o DPkg::Lock::Timeout=600 $debs >"$work/install.log" 2>&1 || {
		cat "$work/install.log"
		fail "apt-get install of the packages failed"
	}
	for p in $packages; do
		[ "$(dpkg-query -W -f='${db:Status-Status}' "$p")" = installed ] ||
			fail "$p is not installed after apt-get install"
	done
	unset VCMALLOC_LIB
	export PKG_CONFIG_LIBDIR="$lib/pkgconfig"
else
	step "extracting the packages into $root"
	for deb in $debs; do
		dpkg-deb -x "$deb" "$root" || fail "dpkg-deb -x $deb failed"
	done
	export VCMALLOC_LIB="$root$lib/libvcmalloc.so.0"
	export PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_LIBDIR="$root$lib/pkgconfig"
fi
unset LD_PRELOAD VCMALLOC_INDEX VCMALLOC_STATS

step "checking"
# The library by its SONAME.
soname=$(objdump -p "$root$lib/libvcmalloc.so.0" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libvcmalloc.so.0 ] || fail "SONAME is '$soname', expected libvcmalloc.so.0"

# vcmalloc is active: its statistics appear at exit, in the mode asked for.
workload='my @a = map { "x" x $_ } 1 .. 2000; print scalar(@a), "\n"'
expect_stats()
{
	# $1 what, $2 mode, $3 stderr file, $4 stdout file
	[ "$(cat "$4")" = 2000 ] || fail "$1: the program printed '$(cat "$4")'"
	grep -q "^{\"index\": \"$2\"" "$3" || fail "$1: no vcmalloc statistics: $(cat "$3")"
}
LD_PRELOAD="$root$lib/libvcmalloc.so.0" VCMALLOC_STATS=json VCMALLOC_INDEX=fallback \
	perl -e "$workload" >"$work/out" 2>"$work/err"
expect_stats "LD_PRELOAD of the installed library" fallback "$work/err" "$work/out"

launcher=$root/usr/bin/vcmalloc
[ "$("$launcher" --version)" = "vcmalloc $version" ] ||
	fail "vcmalloc --version printed '$("$launcher" --version)'"
"$launcher" --stats json --index cpu -- perl -e "$workload" >"$work/out" 2>"$work/err" ||
	fail "the installed launcher failed: $(cat "$work/err")"
expect_stats "the installed launcher" cpu "$work/err" "$work/out"
"$launcher" -- perl -e 'exit 3'
status=$?
[ "$status" -eq 3 ] || fail "the installed launcher returned $status for a program exiting 3"

# Programs built against libvcmalloc-dev: shared through pkg-config, and static.
flags=$(pkg-config --cflags --libs vcmalloc) || fail "pkg-config knows no vcmalloc"
# shellcheck disable=SC2086 # flags are words
cc -O2 -o "$work/viapc" "$here/../install/uses_vcmalloc.c" $flags \
	${root:+-Wl,-rpath,"$root$lib"} || fail "cannot build with pkg-config's flags '$flags'"
"$work/viapc" || fail "the program linked through pkg-config did not use vcmalloc"
loaded=$(ldd "$work/viapc" | awk '$1 == "libvcmalloc.so.0" {print $3}')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$root$lib/libvcmalloc.so.0")" ] ||
	fail "the program does not load the packaged library: $(ldd "$work/viapc")"
cc -O2 -o "$work/viastatic" "$here/../install/uses_vcmalloc.c" -I"$root/usr/include" \
	"$root$lib/libvcmalloc.a" -lpthread || fail "cannot build with the static archive"
"$work/viastatic" || fail "the statically linked program did not use vcmalloc"

if [ -n "$installed" ]; then
	step "purging"
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=600 \
		$packages >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "purge failed"; }
	installed=""
	for p in $packages; do
		state=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
		[ -z "$state" ] || [ "$state" = not-installed ] || fail "$p is still $state after purge"
	done
	[ ! -e /usr/bin/vcmalloc ] && [ ! -e "$lib/libvcmalloc.so.0" ] ||
		fail "files left after purge"
	step "installed, checked and purged"
fi
echo "packages: ok"
