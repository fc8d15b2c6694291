#!/bin/sh
# tests/install/install_test.sh BUILD_DIR - install vcmalloc into a scratch prefix
# and build programs against it the three ways users do: pkg-config (shared),
# -lvcmalloc, and the static archive. Each program must get its memory from
# vcmalloc (vcmalloc_stats() sees its allocation) and libc's heap must not move.
set -eu
build=$1
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
meson install -C "$build" --no-rebuild --destdir "$work/root" >/dev/null
# meson installs under DESTDIR + prefix; find what it produced.
pc=$(find "$work/root" -name vcmalloc.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no vcmalloc.pc installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
incdir=$(dirname "$(find "$work/root" -name vcmalloc.h | head -n 1)")
# Point the .pc file at the scratch location.
mkdir -p "$prefix"
sed -e "s|^prefix=.*|prefix=$work/root/usr/local|" "$pc" > "$work/vcmalloc.pc"
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
echo "install, pkg-config, -lvcmalloc and static archive: ok"
