/* SPDX-License-Identifier: MIT */
// bench_shim.cc: bench.h implemented over Google Benchmark. The only C++ in the tree.
// A bench_state is a benchmark::State, a bench_handle a benchmark::internal::Benchmark;
// the casts are the whole facade. bench_run_batch is one call per batch, so the C/C++
// boundary adds nothing per iteration (bm_facade measures it against facade/raw_cpp).
#include "bench.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

benchmark::State *S(bench_state *st) { return reinterpret_cast<benchmark::State *>(st); }
const benchmark::State *S(const bench_state *st) {
  return reinterpret_cast<const benchmark::State *>(st);
}
benchmark::internal::Benchmark *B(bench_handle *h) {
  return reinterpret_cast<benchmark::internal::Benchmark *>(h);
}
bench_handle *H(benchmark::internal::Benchmark *b) { return reinterpret_cast<bench_handle *>(b); }

double g_default_min_time = 0; // 0: Google Benchmark's own default (0.5 s)

} // namespace

extern "C" {

bench_handle *bench_register(const char *name, bench_fn fn) {
  return H(benchmark::RegisterBenchmark(
      name, [fn](benchmark::State &s) { fn(reinterpret_cast<bench_state *>(&s)); }));
}

bench_handle *bench_args(bench_handle *h, long lo, long hi, int mult) {
  B(h)->RangeMultiplier(mult)->Range(lo, hi);
  return h;
}

bench_handle *bench_arg(bench_handle *h, long v) {
  B(h)->Arg(v);
  return h;
}

bench_handle *bench_threads(bench_handle *h, int n) {
  B(h)->Threads(n);
  return h;
}

bench_handle *bench_thread_range(bench_handle *h, int lo, int hi) {
  B(h)->ThreadRange(lo, hi);
  return h;
}

bench_handle *bench_real_time(bench_handle *h) {
  B(h)->UseRealTime();
  return h;
}

long bench_arg0(const bench_state *st) { return static_cast<long>(S(st)->range(0)); }
int bench_thread_index(const bench_state *st) { return S(st)->thread_index(); }
int bench_threads_n(const bench_state *st) { return S(st)->threads(); }
bool bench_run_batch(bench_state *st, long n) { return S(st)->KeepRunningBatch(n); }
long bench_iterations(const bench_state *st) { return static_cast<long>(S(st)->iterations()); }
void bench_set_items(bench_state *st, long n) { S(st)->SetItemsProcessed(n); }
void bench_set_bytes(bench_state *st, long n) { S(st)->SetBytesProcessed(n); }
void bench_skip(bench_state *st, const char *why) { S(st)->SkipWithError(why); }
void bench_pause(bench_state *st) { S(st)->PauseTiming(); }
void bench_resume(bench_state *st) { S(st)->ResumeTiming(); }

void bench_default_min_time(double seconds) { g_default_min_time = seconds; }

int bench_main(int argc, char **argv) {
  // Append the default --benchmark_min_time unless the command line sets one.
  std::vector<char *> args(argv, argv + argc);
  std::string min_time;
  bool has_min_time = false;
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], "--benchmark_min_time", 20) == 0)
      has_min_time = true;
  if (!has_min_time && g_default_min_time > 0) {
    min_time = "--benchmark_min_time=" + std::to_string(g_default_min_time);
    args.push_back(&min_time[0]);
  }
  args.push_back(nullptr);
  int n = static_cast<int>(args.size()) - 1;
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data()))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

void bench_register_facade_baselines(void) {
  benchmark::RegisterBenchmark("facade/raw_cpp", [](benchmark::State &s) {
    void *p = &s;
    for (auto _ : s)
      benchmark::DoNotOptimize(p);
    s.SetItemsProcessed(static_cast<int64_t>(s.iterations()));
  });
  benchmark::RegisterBenchmark("facade/raw_cpp_batch", [](benchmark::State &s) {
    void *p = &s;
    while (s.KeepRunningBatch(1000))
      for (int i = 0; i < 1000; i++)
        benchmark::DoNotOptimize(p);
    s.SetItemsProcessed(static_cast<int64_t>(s.iterations()));
  });
}

} // extern "C"
