// The benchmark families of cubby_bench, one file each; each registers its benchmarks for one
// workload. Family names are a contract dashboards key on (BM_<Family>/<workload>...): main
// (cubby_bench.cpp) calls these per workload in this order, so that every warm family can report
// its speedup over the cold compile measured before it in the same run.
#pragma once

#include <benchmark/benchmark.h>

#include "runner.hpp"

namespace cubby_bench {

// warm.cpp: BM_KeyDerive/<w> (key derivation of every program, the warm path's first step).
void register_key_derive(const BenchWorkload* workload);

// cold.cpp: BM_ColdCompile/<w> (every program compiled in a fresh store, CUBBY_PCH's default), in
// `rounds` iterations.
void register_cold_compile(const BenchWorkload* workload, benchmark::IterationCount rounds);

// cold_suite.cpp: BM_ColdSuite/<w>/{serial,pch}, then /parallel:N and /parallel_pch:N (`cubby warm`
// with N workers) for each N of parallel_jobs, in `rounds` iterations.
void register_cold_suite(const BenchWorkload* workload, benchmark::IterationCount rounds);

// warm.cpp: BM_WarmHitMemory/<w> and BM_WarmHitDisk/<w>.
void register_warm_hits(const BenchWorkload* workload);

// remote.cpp: per backend of CUBBY_BENCH_BACKENDS (or CUBBY_REMOTE's), BM_WarmHitRemote/<w>,
// BM_FleetFirstRun/<w> and BM_RemoteGet/<w>/{raw,lz4}; one iteration each (skipped) without a
// remote.
void register_remote(const BenchWorkload* workload);

// hit_vs_load.cpp: BM_HitVsLoad/<w> (the hit path against its floor on a GPU).
void register_hit_vs_load(const BenchWorkload* workload);

// remote.cpp: BM_FleetFirstRunLoaded/<w> (after BM_HitVsLoad: it compares with its hit arm).
void register_fleet_first_run_loaded(const BenchWorkload* workload);

}  // namespace cubby_bench
