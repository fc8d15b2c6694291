// SPDX-License-Identifier: MIT
// gbench.cc - the C++ side of gbench.h: thin forwarding to Google Benchmark.
// gb_state is never defined: a gb_state pointer is a benchmark::State pointer in
// disguise, and likewise gb_bench for benchmark::internal::Benchmark.

#include "gbench.h"

#include <benchmark/benchmark.h>

namespace
{

benchmark::State &state_of(gb_state *s)
{
	return *reinterpret_cast<benchmark::State *>(s);
}

const benchmark::State &state_of(const gb_state *s)
{
	return *reinterpret_cast<const benchmark::State *>(s);
}

benchmark::internal::Benchmark *bench_of(gb_bench *b)
{
	return reinterpret_cast<benchmark::internal::Benchmark *>(b);
}

} // namespace

extern "C" gb_bench *gb_register(const char *name, gb_fn fn, void *ctx)
{
	auto *b = benchmark::RegisterBenchmark(name, [fn, ctx](benchmark::State &state) {
		fn(reinterpret_cast<gb_state *>(&state), ctx);
	});
	return reinterpret_cast<gb_bench *>(b);
}

extern "C" void gb_arg(gb_bench *b, int64_t arg)
{
	bench_of(b)->Arg(arg);
}

extern "C" void gb_threads(gb_bench *b, int threads)
{
	bench_of(b)->Threads(threads);
}

extern "C" void gb_use_real_time(gb_bench *b)
{
	bench_of(b)->UseRealTime();
}

extern "C" void gb_time_unit_ns(gb_bench *b)
{
	bench_of(b)->Unit(benchmark::kNanosecond);
}

extern "C" int gb_main(int argc, char **argv)
{
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 1;
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}

extern "C" int gb_keep_running_batch(gb_state *s, int64_t n)
{
	return state_of(s).KeepRunningBatch(n) ? 1 : 0;
}

extern "C" int64_t gb_arg_value(const gb_state *s, int index)
{
	return state_of(s).range(static_cast<std::size_t>(index));
}

extern "C" int gb_thread_index(const gb_state *s)
{
	return state_of(s).thread_index();
}

extern "C" int gb_thread_count(const gb_state *s)
{
	return state_of(s).threads();
}

extern "C" int64_t gb_iterations(const gb_state *s)
{
	return state_of(s).iterations();
}

extern "C" void gb_pause_timing(gb_state *s)
{
	state_of(s).PauseTiming();
}

extern "C" void gb_resume_timing(gb_state *s)
{
	state_of(s).ResumeTiming();
}

extern "C" void gb_set_items_processed(gb_state *s, int64_t items)
{
	state_of(s).SetItemsProcessed(items);
}

extern "C" void gb_set_counter(gb_state *s, const char *name, double value,
			       enum gb_counter_kind kind)
{
	benchmark::Counter::Flags flags = benchmark::Counter::kDefaults;
	if (kind == GB_COUNTER_RATE)
		flags = benchmark::Counter::kIsRate;
	else if (kind == GB_COUNTER_AVG_THREADS)
		flags = benchmark::Counter::kAvgThreads;
	state_of(s).counters[name] = benchmark::Counter(value, flags);
}

extern "C" void gb_skip_with_error(gb_state *s, const char *message)
{
	state_of(s).SkipWithError(message);
}
