# tests/vm/checks/common.sh - shared by the check scripts (bash, sourced).
#
# A check script boots one or more guests with run-guest, keeps each command's output
# in $out_dir/<n>.out (run-guest --output-dir), and asserts on it with the helpers
# below. Every failed assertion is reported; the script's exit status is 1 if any
# failed (finish), so one run shows all that is wrong. A harness failure (run-guest
# exit status 2 or 3: no kernel, boot timeout, panic) is a failure too, never a skip.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run_guest=$here/run-guest
failures=0
out_dir=$(mktemp -d "${TMPDIR:-/tmp}/vcmalloc-vmcheck.XXXXXX")
trap 'rm -rf "$out_dir"' EXIT

bad() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

ok() {
	echo "ok: $*"
}

# boot NAME RUN-GUEST-ARGS... -- COMMANDS...: boots a guest with its outputs in
# $out_dir/NAME; sets $guest to that directory. Returns run-guest's status; 0 and 1
# (some command failed) mean the guest ran every command.
boot() {
	local name=$1 status
	shift
	guest=$out_dir/$name
	mkdir -p "$guest"
	echo "--- guest $name: run-guest $*"
	"$run_guest" --output-dir "$guest" "$@"
	status=$?
	echo "--- guest $name: run-guest exit status $status"
	return $status
}

# out N: command N's output in the last guest booted.
out() {
	cat "$guest/$1.out" 2>/dev/null
}

# status_is N WANT DESC: command N exited with WANT.
status_is() {
	local got
	got=$(cat "$guest/$1.status" 2>/dev/null)
	if [ "$got" = "$2" ]; then ok "$3 (status $got)"; else bad "$3: status '${got:-none}', want $2"; fi
}

# value N KEY: the rest of the first line of command N's output that starts with
# "KEY:", trimmed.
value() {
	out "$1" | sed -n "s/^$2:[[:space:]]*//p" | head -n 1 | sed 's/[[:space:]]*$//'
}

# equal GOT WANT DESC
equal() {
	if [ "$1" = "$2" ]; then ok "$3 = $1"; else bad "$3: got '$1', want '$2'"; fi
}

# has N REGEX DESC: command N's output has a line matching the extended REGEX.
has() {
	if out "$1" | grep -Eq -- "$2"; then ok "$3"; else bad "$3: no line matching /$2/ in output $1"; fi
}

# json_field N KEY: the value of "KEY" in the last JSON object line of output N
# (vcmalloc's VCMALLOC_STATS=json line).
json_field() {
	out "$1" | grep '^{"index"' | tail -n 1 |
		sed -n "s/.*\"$2\": \(\"[^\"]*\"\|[0-9]*\).*/\1/p" | tr -d '"'
}

# cpu_list_members LIST: expands a kernel CPU list ("0-3,8") into numbers, one a line.
cpu_list_members() {
	echo "$1" | tr ',' '\n' | awk -F- 'NF { e = (NF > 1) ? $2 : $1; for (i = $1; i <= e; i++) print i }'
}

finish() {
	if [ "$failures" -gt 0 ]; then
		echo "$failures check(s) failed"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}
