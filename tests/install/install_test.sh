#!/bin/sh
# tests/install/install_test.sh BUILD_DIR - install vcmalloc into a scratch prefix
# and build programs against it the three ways users do: pkg-config (shared),
# -lvcmalloc, and the static archive. Each program must get its memory from
# vcmalloc (vcmalloc_stats() sees its allocation) and libc's heap must not move.
# Then the installed launcher runs a program with the installed library.
set -eu
build=$1
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
meson install -C "$build" --no-rebuild --destdir "$work/root" >/dev/null
# meson installs under DESTDIR + prefix; find what it produced.
pc=$(find "$work/root" -name vcmalloc.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no vcmalloc.pc installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
incdir=$(dirname "$(find "$work/root" -name vcmalloc.h | head -n 1)")
# Point the .pc file at the scratch location: DESTDIR in front of the configured
# prefix (/usr/local by default, /usr in the Debian package build).
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -e "s|^prefix=.*|prefix=$work/root$prefix|" "$pc" > "$work/vcmalloc.pc"
export PKG_CONFIG_PATH=$work
flags=$(pkg-config --cflags --libs vcmalloc)
case "$flags" in *-lvcmalloc*) ;; *) echo "FAIL: pkg-config gave '$flags'"; exit 1 ;; esac

cc -O2 -o "$work/viapc" "$src/uses_vcmalloc.c" $flags -Wl,-rpath,"$libdir"
cc -O2 -o "$work/vial" "$src/uses_vcmalloc.c" -I"$incdir" -L"$libdir" -lvcmalloc \
	-Wl,-rpath,"$libdir"
cc -O2 -o "$work/viastatic" "$src/uses_vcmalloc.c" -I"$incdir" "$libdir/libvcmalloc.a" \
	-lpthread
for p in viapc vial viastatic; do
	out=$("$work/$p") || { echo "FAIL: $p exited $?: $out"; exit 1; }
	echo "$p: $out"
done
if ldd "$work/viastatic" | grep -q libvcmalloc; then
	echo "FAIL: the static build still loads libvcmalloc.so"
	exit 1
fi
# A C program that preloads or links vcmalloc must not pull in the C++ runtime.
if ldd "$work/vial" | grep -q 'libstdc++'; then
	echo "FAIL: libvcmalloc.so brings libstdc++ into a C program"
	exit 1
fi
# The launcher: installed with its manual page, naming the runtime library where
# meson put it (without DESTDIR), and running a program with that library.
launcher=$(find "$work/root" -path '*/bin/vcmalloc' | head -n 1)
[ -n "$launcher" ] && [ -x "$launcher" ] || { echo "FAIL: no executable bin/vcmalloc"; exit 1; }
[ -n "$(find "$work/root" -path '*/man1/vcmalloc.1')" ] || { echo "FAIL: no vcmalloc.1"; exit 1; }
runtime=$(find "$libdir" -name 'libvcmalloc.so.[0-9]*' -type l | head -n 1)
[ -n "$runtime" ] || { echo "FAIL: no libvcmalloc.so.N link (SONAME) installed"; exit 1; }
grep -qxF "vc_installed_lib='${runtime#"$work/root"}'" "$launcher" ||
	{ echo "FAIL: $launcher does not name ${runtime#"$work/root"}"; exit 1; }
stats=$(VCMALLOC_LIB=$runtime "$launcher" --stats json --index fallback -- perl -e 'my @a = (1) x 1000' 2>&1)
case "$stats" in
'{"index": "fallback"'*) ;;
*) echo "FAIL: the installed launcher gave: $stats"; exit 1 ;;
esac
echo "install, pkg-config, -lvcmalloc, static archive and launcher: ok"
