#!/bin/sh
# tests/launcher/launcher_test.sh LAUNCHER PROBE LIBRARY MARKER VERSION - runs the
# vcmalloc command on launcher_probe with the build tree's library (VCMALLOC_LIB) and
# checks what the probe sees, the exit statuses and the error messages.
set -u
launcher=$1 probe=$2 lib=$3 marker=$4 version=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
export VCMALLOC_LIB="$lib"
unset LD_PRELOAD VCMALLOC_INDEX VCMALLOC_STATS VCMALLOC_VCPU_CACHE_BYTES \
	VCMALLOC_RECLAIM_MS VCMALLOC_DECAY_MS VCMALLOC_NUMA VCMALLOC_BACKGROUND \
	VCMALLOC_HUGE_PAGES

fail()
{
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# run ARGS... : runs the launcher, leaving stdout, stderr and status in
# $work/out, $work/err and $status.
run()
{
	"$launcher" "$@" >"$work/out" 2>"$work/err"
	status=$?
}

# expect_line LINE WHAT : the probe printed exactly LINE.
expect_line()
{
	grep -qxF -- "$1" "$work/out" || fail "$2: no line '$1' in: $(cat "$work/out")"
}

expect_status()
{
	[ "$status" -eq "$1" ] || fail "$2: exit status $status, expected $1 (stderr: $(cat "$work/err"))"
}

# expect_error STATUS TEXT WHAT : failed with STATUS, stderr names TEXT, the probe
# never ran.
expect_error()
{
	expect_status "$1" "$3"
	grep -qF -- "$2" "$work/err" || fail "$3: stderr lacks '$2': $(cat "$work/err")"
	[ ! -s "$work/out" ] || fail "$3: the program ran: $(cat "$work/out")"
}

# Without options: vcmalloc serves malloc, the probe's environment gets only the
# preload.
run -- "$probe"
expect_status 0 "no options"
expect_line "LD_PRELOAD=$lib" "no options"
expect_line "VCMALLOC_INDEX=(unset)" "no options"
if grep -qx "index=none" "$work/out" || grep -qx "index=not-malloc" "$work/out"; then
	fail "no options: vcmalloc is not the program's malloc: $(cat "$work/out")"
fi

# Each option reaches the environment; --index also the library's mode in use.
run --index fallback --stats json --cache-bytes 2m --reclaim-ms 250 --decay-ms 5 \
	--numa 0 --background 0 --huge-pages 1 -- "$probe"
expect_status 0 "all options"
expect_line "VCMALLOC_INDEX=fallback" "--index"
expect_line "index=fallback" "--index (library)"
expect_line "VCMALLOC_STATS=json" "--stats"
expect_line "VCMALLOC_VCPU_CACHE_BYTES=2m" "--cache-bytes"
expect_line "VCMALLOC_RECLAIM_MS=250" "--reclaim-ms"
expect_line "VCMALLOC_DECAY_MS=5" "--decay-ms"
expect_line "VCMALLOC_NUMA=0" "--numa"
expect_line "VCMALLOC_BACKGROUND=0" "--background"
expect_line "VCMALLOC_HUGE_PAGES=1" "--huge-pages"
grep -q '^{"index": "fallback"' "$work/err" ||
	fail "--stats json: no JSON statistics on stderr: $(cat "$work/err")"

# --option=value, and the program's first argument ending the options without --.
run --index=cpu --stats=text "$probe"
expect_status 0 "--option=value"
expect_line "VCMALLOC_INDEX=cpu" "--index=cpu"
expect_line "index=cpu" "--index=cpu (library)"
expect_line "VCMALLOC_STATS=text" "--stats=text"
[ -s "$work/err" ] || fail "--stats text: nothing on stderr"

# A variable the launcher is not told to set keeps its value.
VCMALLOC_DECAY_MS=77 run --index fallback -- "$probe"
expect_line "VCMALLOC_DECAY_MS=77" "inherited variable"

# An existing LD_PRELOAD is kept, behind vcmalloc.
LD_PRELOAD="$marker" run -- "$probe"
expect_status 0 "LD_PRELOAD kept"
expect_line "LD_PRELOAD=$lib:$marker" "LD_PRELOAD kept"
expect_line "marker=yes" "LD_PRELOAD kept"

# The exit status passes through, and the program is the launcher's process (exec).
run -- "$probe" 42
expect_status 42 "exit status"
"$launcher" -- "$probe" >"$work/out" 2>"$work/err" &
pid=$!
wait "$pid"
expect_line "pid=$pid" "exec (same process id)"
run -- sh -c 'kill -TERM $$'
expect_status 143 "death by SIGTERM"

# --version and --help.
run --version
expect_status 0 "--version"
expect_line "vcmalloc $version" "--version"
run --help
expect_status 0 "--help"
grep -q -- '--cache-bytes' "$work/out" || fail "--help does not list --cache-bytes"

# Errors: exit 125 (126, 127 for the program), a message naming the culprit.
run --bogus "$probe"
expect_error 125 "unknown option '--bogus'" "unknown option"
run --index sometimes "$probe"
expect_error 125 "invalid value 'sometimes' for --index" "bad --index"
run --stats xml "$probe"
expect_error 125 "invalid value 'xml' for --stats" "bad --stats"
for bad in 12x -1 '' 2mb 99999999999999g 1234567890123456789; do
	run --cache-bytes "$bad" "$probe"
	expect_error 125 "invalid value '$bad' for --cache-bytes" "bad --cache-bytes '$bad'"
done
for bad in 1s -5 1k ''; do
	run --decay-ms "$bad" "$probe"
	expect_error 125 "invalid value '$bad' for --decay-ms" "bad --decay-ms '$bad'"
done
run --numa 2 "$probe"
expect_error 125 "invalid value '2' for --numa" "bad --numa"
run --background=yes "$probe"
expect_error 125 "invalid value 'yes' for --background" "bad --background"
run "$probe" --decay-ms
expect_status 0 "options after the program are the program's"
run --decay-ms
expect_error 125 "option --decay-ms needs a value" "missing value"
run --index fallback
expect_error 125 "no program given" "no program"
run --
expect_error 125 "no program given" "no program after --"
run -- vcmalloc-launcher-test-no-such-program
expect_error 127 "vcmalloc-launcher-test-no-such-program: command not found" "unknown command"
run -- "$work/missing"
expect_error 127 "$work/missing: no such file" "missing file"
: >"$work/plain"
run -- "$work/plain"
expect_error 126 "$work/plain: not an executable file" "not executable"
VCMALLOC_LIB="$work/nolib.so" run -- "$probe"
expect_error 125 "library not found: $work/nolib.so" "library not found"
mkdir "$work/a dir"
cp "$lib" "$work/a dir/libvcmalloc.so"
VCMALLOC_LIB="$work/a dir/libvcmalloc.so" run -- "$probe"
expect_error 125 "LD_PRELOAD cannot hold a path with a space or colon" "path with a space"

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "launcher: all checks passed"
