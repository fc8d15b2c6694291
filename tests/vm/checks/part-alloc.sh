# tests/vm/checks/part-alloc.sh - runs the allocator's stress program few_threads in the
# guest, with libvcmalloc.so preloaded and VCMALLOC_STATS=json, and checks its
# statistics (sourced by checks/guest, bash). Commands:
#   +0, +1  MANY threads (16) in VCMALLOC_INDEX=vcpu and cpu;
#   +2      FEW threads (4) in vcpu mode;
#   +3      FEW threads in cpu mode inside a cpuset of FEW CPUs (node 0's first ones);
#   +4      FEW threads in cpu mode, anywhere (reported, not asserted: how many CPUs the
#           scheduler spreads them over is its business);
#   +5      FEW threads in vcpu mode (4x the steps), each moving itself to another CPU
#           every 10 steps (few_threads' roam): 6.12 hands them new mm_cids as they go.
# few_threads verifies every block's contents and must exit 0. The JSON must name the
# index mode actually in use: vcpu when the kernel has mm_cid (6.12), else cpu
# (vcmalloc's documented fallback, 6.1). In vcpu mode FEW threads populate few vCPU
# caches whatever the guest's CPU count (bound below); in cpu mode inside a FEW-CPU
# cpuset at most FEW. Nothing is timed. (tests/stress/threads_verify, 32 threads x
# 30000 operations, takes many minutes under TCG on a busy 2-core host, hence
# few_threads with an operation count chosen here.)
# Needs: kernel smp build few_threads; optional many few ops vcpu_index.

alloc_requires() {
	[ -d "$build" ] && [ -x "$few_threads" ] || usage_error "part alloc needs --build and --few-threads"
	[ "$few" -lt "$smp" ] || usage_error "part alloc needs --few below --smp"
	if [ -z "$vcpu_index" ]; then
		case "$kernel" in
		6.12) vcpu_index=vcpu ;;
		6.1) vcpu_index=cpu ;;
		*) usage_error "part alloc needs --vcpu-index with a kernel path" ;;
		esac
	fi
	copies+=(--with-vcmalloc "$build" --copy "$few_threads")
}

alloc_commands() {
	local vc='env LD_PRELOAD=$VM_LIB_VCMALLOC VCTEST_EXPECT_VCMALLOC=1 VCMALLOC_STATS=json'
	add_command "$vc VCMALLOC_INDEX=vcpu $few_threads $many $ops"
	add_command "$vc VCMALLOC_INDEX=cpu $few_threads $many $ops"
	add_command "$vc VCMALLOC_INDEX=vcpu $few_threads $few $ops"
	add_command "vm-cpuset 0-$((few - 1)) 0 -- $vc VCMALLOC_INDEX=cpu $few_threads $few $ops"
	add_command "$vc VCMALLOC_INDEX=cpu $few_threads $few $ops"
	add_command "$vc VCMALLOC_INDEX=vcpu $few_threads $few $((4 * ops)) roam"
}

# alloc_check B: B is the number of the part's first command.
alloc_check() {
	local b=$1 n peak few_bound
	equal "$(json_field $b possible_cpus)" "$smp" "possible_cpus in vcmalloc's statistics"
	for ((n = b; n < b + 6; n++)); do
		status_is $n 0 "few_threads (command $n)"
		peak=$(json_field $n vcpu_caches_populated_peak)
		[ -n "$peak" ] || { bad "command $n printed no vcmalloc JSON statistics"; continue; }
		[ "$peak" -le "$smp" ] && ok "command $n: $peak vCPU caches populated (<= $smp)" ||
			bad "command $n: $peak vCPU caches populated, more than $smp CPUs"
	done
	equal "$(json_field $b index)" "$vcpu_index" "index mode when vcpu is asked for"
	equal "$(json_field $((b + 1)) index)" cpu "index mode when cpu is asked for"
	equal "$(json_field $((b + 2)) index)" "$vcpu_index" "index mode of $few threads when vcpu is asked for"
	equal "$(json_field $((b + 3)) index)" cpu "index mode of $few threads in the cpuset"
	has $b "^few_threads: ok \\($many threads" "few_threads $many (vcpu mode) completed"
	has $((b + 1)) "^few_threads: ok \\($many threads" "few_threads $many (cpu mode) completed"
	for ((n = b + 2; n < b + 6; n++)); do
		has $n "^few_threads: ok \\($few threads" "few_threads $few (command $n) completed"
	done

	# Kernel 6.12 keeps a thread's mm_cid on the CPU it last ran on and frees it lazily
	# (a periodic scan, or a later thread of the process on that CPU), so a process
	# whose threads wander can briefly hold more mm_cids than it has threads. The
	# bound: twice the thread count (main thread included), far below the CPU count.
	few_bound=$((2 * (few + 1)))
	peak=$(json_field $((b + 2)) vcpu_caches_populated_peak)
	if [ "$vcpu_index" = vcpu ]; then
		[ -n "$peak" ] && [ "$peak" -le "$few_bound" ] &&
			ok "vcpu mode, $few threads on $smp vCPUs: $peak caches populated (<= $few_bound)" ||
			bad "vcpu mode, $few threads on $smp vCPUs: ${peak:-no} caches populated, want <= $few_bound"
	fi
	# Roaming, the caches follow the threads, not the ids the kernel has not taken
	# back yet: a populate that makes the populated ids outnumber the live threads
	# drains the least recently used one (vcpu_cache.c, drain_surplus). At most the
	# threads (main included), plus one populate in flight per worker, plus two whose
	# drain was left to a drain already under way (the reclaim lock is not waited
	# for); without the rule 4 roaming threads populated 15 ids on 6.12 (with it: 6-8).
	local roam_bound=$((2 * few + 3))
	peak=$(json_field $((b + 5)) vcpu_caches_populated_peak)
	if [ "$vcpu_index" = vcpu ]; then
		[ -n "$peak" ] && [ "$peak" -le $roam_bound ] &&
			ok "vcpu mode, $few roaming threads: $peak caches populated (<= $roam_bound)," \
				"$(json_field $((b + 5)) vcpu_surplus_drains) surplus drains" ||
			bad "vcpu mode, $few roaming threads: ${peak:-no} caches populated, want <= $roam_bound"
	fi
	peak=$(json_field $((b + 3)) vcpu_caches_populated_peak)
	[ -n "$peak" ] && [ "$peak" -le "$few" ] &&
		ok "cpu mode in a $few-CPU cpuset: $peak caches populated (<= $few)" ||
		bad "cpu mode in a $few-CPU cpuset: ${peak:-no} caches populated, want <= $few"
	echo "note: cpu mode, $few threads free to roam $smp vCPUs:" \
		"$(json_field $((b + 4)) vcpu_caches_populated_peak) caches populated"
}
