#!/bin/bash
# Workload for the bash preload test: variables, arrays, associative arrays, string
# operations, arithmetic, functions, command substitution, pipes and subshells.
set -euo pipefail
declare -A seen
words=()
x=7
for ((i = 0; i < 20000; i++)); do
	x=$(((x * 1103515245 + 12345) % 2147483648))
	w="w$((x % 3000))"
	words+=("$w")
	seen[$w]=$((${seen[$w]:-0} + 1))
done
echo "words ${#words[@]}, distinct ${#seen[@]}"
joined="${words[*]}"
replaced="${joined//w1/W-one}"
echo "joined length ${#joined}, replaced length ${#replaced}"
fib() { local n=$1; if ((n < 2)); then echo "$n"; else echo $(($(fib $((n - 1))) + $(fib $((n - 2))))); fi; }
echo "fib 9 = $(fib 9)"
top=$(for k in "${!seen[@]}"; do echo "${seen[$k]} $k"; done | sort -k1,1nr -k2 | sed -n 1,5p | tr '\n' ';')
echo "top: $top"
printf '%s\n' "${words[@]:0:2000}" | sort | uniq -c | sort -k1,1nr -k2 | sed -n 1,3p
s=""
for ((i = 0; i < 3000; i++)); do s+="${i}:"; done
upper="string ${#s}, upper ${s^^}"
echo "${upper:0:60}"
(cd / && echo "subshell in $(pwd)")
mapfile -t lines < <(seq 1 5000)
echo "mapfile ${#lines[@]} last ${lines[-1]}"
unset 'seen[w1]'
echo "after unset ${#seen[@]}"
