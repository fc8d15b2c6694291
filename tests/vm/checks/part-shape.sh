# tests/vm/checks/part-shape.sh - checks that a guest has the requested shape and that
# the placement tools work in it (sourced by checks/guest, bash):
#   - vm-info reports the kernel series, the CPU count, the node count, and each node's
#     CPU list as run-guest laid it out (contiguous, even split), and the cgroup mode;
#   - the rseq probe reports the kernel's rseq feature size (28 with mm_cid, 0 without);
#   - `taskset -c LAST` keeps every probe thread on CPU LAST (and on a kernel with
#     mm_cid, one allowed CPU means every mm_cid is 0);
#   - vm-cpuset confines a command to the last node's CPUs and memory through the
#     mounted cgroup hierarchy (v2 or v1);
#   - a failing command's status reaches the host (so run-guest exits 1).
# Needs: kernel smp nodes cgroup probe feature_size.

shape_requires() {
	[ -x "$probe" ] && [ -n "$feature_size" ] || usage_error "part shape needs --probe and --feature-size"
	[ $((smp % nodes)) = 0 ] || usage_error "part shape needs --smp to be a multiple of --nodes"
	copies+=(--copy "$probe")
}

shape_commands() {
	per_node=$((smp / nodes))
	last_cpu=$((smp - 1))
	last_node=$((nodes - 1))
	last_node_cpus="$((last_node * per_node))-$last_cpu"
	[ "$per_node" = 1 ] && last_node_cpus=$last_cpu
	add_command vm-info
	add_command "$probe 4 0.3"
	add_command "taskset -c $last_cpu $probe 3 0.3"
	add_command "vm-cpuset $last_node_cpus $last_node -- sh -c 'grep -E \"^(Cpus|Mems)_allowed_list\" /proc/self/status; echo cgroup: \$(cat /proc/self/cgroup); exec $probe 3 0.3'"
	add_command "exit 7"
	expect_failed_commands=1
}

# shape_check B: B is the number of the part's first command.
shape_check() {
	local b=$1 n want cpus_seen allowed outside c nodes_seen
	# the machine
	status_is $b 0 "vm-info"
	case "$kernel" in
	6.12 | 6.1) has $b "^kernel: $(echo "$kernel" | sed 's/\./\\./')\\." "guest kernel is the $kernel series" ;;
	esac
	equal "$(value $b cpus)" "$smp" "online CPUs"
	equal "$(value $b cpus-online)" "0-$last_cpu" "online CPU list"
	equal "$(value $b nodes)" "$nodes" "NUMA nodes"
	for ((n = 0; n < nodes; n++)); do
		want="$((n * per_node))-$(((n + 1) * per_node - 1))"
		[ "$per_node" = 1 ] && want=$n
		equal "$(out $b | sed -n "s/^node$n: cpus \([^ ]*\) .*/\1/p")" "$want" "node$n CPU list"
	done
	has $b "^cgroup: $cgroup" "cgroup hierarchy $cgroup mounted"

	# rseq as the kernel offers it
	status_is $((b + 1)) 0 "vcrseq-probe"
	equal "$(out $((b + 1)) | sed -n 's/^kernel feature size: *\([0-9]*\).*/\1/p')" "$feature_size" \
		"rseq feature size"
	equal "$(value $((b + 1)) 'possible cpus')" "$smp" "possible CPUs seen by the probe"

	# taskset
	status_is $((b + 2)) 0 "taskset -c $last_cpu vcrseq-probe"
	cpus_seen=$(out $((b + 2)) | sed -n 's/^ *thread *[0-9]*: cpu *\([0-9]*\) .*/\1/p' | sort -u | tr '\n' ' ')
	equal "$cpus_seen" "$last_cpu " "CPUs the threads ran on under taskset"
	if [ "$feature_size" -ge 28 ]; then
		equal "$(out $((b + 2)) | sed -n 's/^highest mm_cid seen: \([0-9]*\).*/\1/p')" 0 \
			"highest mm_cid with one allowed CPU"
	fi

	# cpuset
	status_is $((b + 3)) 0 "vm-cpuset $last_node_cpus $last_node"
	equal "$(out $((b + 3)) | sed -n 's/^Cpus_allowed_list:[[:space:]]*//p')" "$last_node_cpus" \
		"Cpus_allowed_list in the cpuset"
	equal "$(out $((b + 3)) | sed -n 's/^Mems_allowed_list:[[:space:]]*//p')" "$last_node" \
		"Mems_allowed_list in the cpuset"
	has $((b + 3)) "^cgroup: .*vm-cpuset\\." "command runs in a vm-cpuset cgroup"
	allowed=" $(cpu_list_members "$last_node_cpus" | tr '\n' ' ')"
	outside=
	for c in $(out $((b + 3)) | sed -n 's/^ *thread *[0-9]*: cpu *\([0-9]*\) .*/\1/p'); do
		case "$allowed" in *" $c "*) ;; *) outside="$outside $c" ;; esac
	done
	[ -n "$(out $((b + 3)) | grep -E '^ *thread')" ] || bad "no probe threads reported in the cpuset"
	equal "${outside:-none}" none "CPUs used outside the cpuset"
	if [ "$feature_size" -ge 28 ]; then
		nodes_seen=$(out $((b + 3)) | sed -n 's/^ *thread.* node \([0-9-]*\) .*/\1/p' | sort -u | tr '\n' ' ')
		equal "$nodes_seen" "$last_node " "rseq node_id of the threads in the cpuset"
	fi

	# a failing command
	status_is $((b + 4)) 7 "failing command's status reaches the host"
}
