// Key derivation for a CuPy-like program in a fresh process, with and without the header scan's
// record between processes (core/src/key/scan_record.hpp).
//
// The workload: CuPy 14's include folders, built from this machine's CUDA toolkit (CUDA_PATH, else
// /usr/local/cuda): `-I<cupy>/_cccl/cub -I<cupy>/_cccl/thrust -I<cupy>/_cccl/libcudacxx
// -I<cupy>/_core/include -I<cuda>/include` as CuPy passes them (its CCCL is a user folder, so
// every CCCL header an mdspan program reaches is a user header the key must cover), plus
// `--std=c++17 -ftz=true --device-as-default-execution-space`, and the 25 mdspan programs of
// tests/python/gpu/test_cupy_mdspan.py's shape (14 name expressions each).
//
// Two sets of programs: cupy25 (bench/workloads/cupy_like_mdspan.cu, 25 modules) and complex224
// (cupy_like_complex_mdspan.cu, 224 modules: test_mdspan.py's count; it reaches Thrust, whose
// backend headers are computed includes). Counter uncached: programs the scan cannot key.
//
//   BM_KeyScan/cupy25/fresh_no_record  a new process without the record: the 25 keys read, lex and
//                                      hash every header once (the per-process memo kept, then)
//   BM_KeyScan/cupy25/fresh_record     a new process with the store's record: headers are stat'ed
//   BM_KeyScan/cupy25/warm             the same process again (the per-process memo of files)
//   BM_KeyScan/cupy25/fresh_watch      a new process with the record and the memo of whole scans
//                                      (scan_watch.hpp) but no book: the 25 programs include the
//                                      same headers, so one scan serves them all
//   BM_KeyScan/cupy25/fresh_book       the same with the store's book of whole scans
//                                      (scan_book.hpp): the one scan is checked, not walked
//   BM_KeyScan/cupy25/warm_watch       the same process again, as a warm test session keys its
//                                      programs (the memo of whole scans on)
//   BM_KeyScan/cupy25/warm_planned     warm_watch with each key's include plan made anew, as
//                                      every Cache::compile makes it (the options read, each -I
//                                      folder placed against the toolkit's), under the program
//                                      names CuPy's adapter gives (/dev/null/cupy/<name>.cu)
// The first three rows run with CUBBY_SCAN_WATCH=0 (the scan's own cost); before the others the
// workload's files are made older than the "too new" window (2 s), as installed headers are.
// A "new process" is forget_header_scans() and a new KeyDeriver (as a new Cache makes): every
// per-process memo of the scan is dropped; the store's files (toolkit names, the record, the
// book) stay. Counter headers_read: files read a round.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cache/key_inputs.hpp"
#include "cubby/nvrtc.hpp"
#include "cuda/include_plan.hpp"
#include "key/include_scan.hpp"

namespace {

namespace fs = std::filesystem;

constexpr int kPerModule = 14;

// Which programs: `file` (under bench/workloads) as `modules` modules.
struct Programs {
  const char* name;
  const char* file;
  int modules;
};
constexpr Programs kCupy25{"cupy25", "cupy_like_mdspan.cu", 25};
constexpr Programs kComplex224{"complex224", "cupy_like_complex_mdspan.cu", 224};

// The program text of every module (@NS@ replaced by the module's namespace).
std::string module_source(const char* file) {
  std::ifstream in(fs::path(CUBBY_BENCH_WORKLOADS) / file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Workload {
  fs::path root;
  std::chrono::steady_clock::time_point written;
  std::vector<cubby::CompileRequest> requests;
  std::string error;
};

fs::path cuda_root() {
  const char* path = std::getenv("CUDA_PATH");
  return path != nullptr && *path != '\0' ? fs::path(path) : fs::path("/usr/local/cuda");
}

// CuPy's layout under `root`, CCCL linked from the toolkit's include/cccl.
Workload make_workload(const Programs& programs) {
  Workload w;
  const char* base = std::getenv("CUBBY_BENCH_DIR");
  w.root = fs::path(base != nullptr && *base != '\0' ? base : fs::temp_directory_path().string()) /
           ("cubby-key-scan-" + std::to_string(::getpid()) + "-" + programs.name);
  const fs::path cccl = cuda_root() / "include" / "cccl";
  if (!fs::is_directory(cccl / "cuda")) {
    w.error = "no CCCL at " + cccl.string() + " (set CUDA_PATH)";
    return w;
  }
  const fs::path cupy = w.root / "cupy" / "_core" / "include";
  const fs::path bundled = cupy / "cupy" / "_cccl";
  fs::create_directories(bundled / "libcudacxx");
  fs::create_directories(bundled / "cub");
  fs::create_directories(bundled / "thrust");
  std::error_code ignored;
  fs::create_directory_symlink(cccl / "cuda", bundled / "libcudacxx" / "cuda", ignored);
  fs::create_directory_symlink(cccl / "nv", bundled / "libcudacxx" / "nv", ignored);
  fs::create_directory_symlink(cccl / "cub", bundled / "cub" / "cub", ignored);
  fs::create_directory_symlink(cccl / "thrust", bundled / "thrust" / "thrust", ignored);
  std::ofstream(cupy / "cupy" / "carray.cuh") << "#pragma once\n#include <cuda/std/cstddef>\n";
  const std::vector<std::string> options = {"-I" + (bundled / "cub").string(),
                                            "-I" + (bundled / "thrust").string(),
                                            "-I" + (bundled / "libcudacxx").string(),
                                            "--std=c++17",
                                            "-I" + cupy.string(),
                                            "-I" + (cuda_root() / "include").string(),
                                            "-ftz=true",
                                            "--device-as-default-execution-space"};
  const char* const types[] = {"float", "double", "int", "long long"};
  const char* const layouts[] = {"cuda::std::layout_right", "cuda::std::layout_left"};
  const std::string source = module_source(programs.file);
  if (source.find("@NS@") == std::string::npos) {
    w.error = std::string("cannot read " CUBBY_BENCH_WORKLOADS "/") + programs.file;
    return w;
  }
  for (int m = 0; m < programs.modules; ++m) {
    cubby::CompileRequest request;
    request.source = source;
    for (std::size_t at; (at = request.source.find("@NS@")) != std::string::npos;) {
      request.source.replace(at, 4, "m" + std::to_string(m));
    }
    request.options = options;
    request.arch = "sm_90";
    for (int i = 0; i < kPerModule; ++i) {
      const int combo = 5 * m + i;
      request.name_expressions.push_back("m" + std::to_string(m) + "::apply<" + types[combo % 4] +
                                         ", cuda::std::dextents<size_t, " +
                                         std::to_string(1 + combo % 3) + ">, " +
                                         layouts[(combo / 3) % 2] + ">");
    }
    w.requests.push_back(std::move(request));
  }
  return w;
}

Workload& workload(const Programs& programs) {
  static std::map<std::string, Workload> made;
  auto [at, inserted] = made.try_emplace(programs.name);
  if (inserted) {
    at->second = make_workload(programs);
    at->second.written = std::chrono::steady_clock::now();
  }
  return at->second;
}

enum class Mode {
  fresh_no_record,
  fresh_record,
  warm,
  fresh_watch,
  fresh_book,
  warm_watch,
  warm_planned
};

void BM_KeyScan(benchmark::State& state, Mode mode, const Programs& programs) {
  Workload& w = workload(programs);
  const auto nvrtc = cubby::locate_nvrtc();
  if (!w.error.empty() || !nvrtc) {
    state.SkipWithError(w.error.empty() ? nvrtc.error().message.c_str() : w.error.c_str());
    return;
  }
  const bool watch = mode == Mode::fresh_watch || mode == Mode::fresh_book ||
                     mode == Mode::warm_watch || mode == Mode::warm_planned;
  const bool warm = mode == Mode::warm || mode == Mode::warm_watch || mode == Mode::warm_planned;
  std::vector<cubby::CompileRequest> requests = w.requests;
  if (mode == Mode::warm_planned) {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      requests[i].program_name = "/dev/null/cupy/m" + std::to_string(i) + ".cu";
    }
  }
  if (watch) {
    ::unsetenv("CUBBY_SCAN_WATCH");
    std::this_thread::sleep_until(w.written + std::chrono::milliseconds(2100));
  } else {
    ::setenv("CUBBY_SCAN_WATCH", "0", 1);
  }
  static int round = 0;
  const fs::path tmp = w.root / ("store-" + std::to_string(round++)) / "tmp";
  // fresh_no_record: nothing is old enough to be kept (toolkit names are still kept).
  const std::int64_t too_new = mode == Mode::fresh_no_record
                                   ? std::numeric_limits<std::int64_t>::max() / 2
                                   : cubby::ScanRecord::kTooNewNs;
  // The Cache's key derivation, made anew for each "new process" (its record is read once).
  auto keys = std::make_unique<cubby::KeyDeriver>(fs::path(), tmp, too_new);
  std::vector<cubby::IncludePlan> plans;
  for (const auto& request : requests)
    plans.push_back(cubby::plan_includes(request, nvrtc->include_dir));
  const auto key_all = [&]() {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (mode == Mode::warm_planned)
        plans[i] = cubby::plan_includes(requests[i], nvrtc->include_dir);
      benchmark::DoNotOptimize(keys->prepare(requests[i], plans[i], "sm_90", *nvrtc).key());
    }
  };
  key_all();  // fill the store's files
  std::uint64_t read = 0;
  std::int64_t rounds = 0;
  std::size_t uncached = 0;  // programs whose headers the scan cannot name
  for (std::size_t i = 0; i < requests.size(); ++i) {
    uncached += keys->inputs(requests[i], plans[i], "sm_90", *nvrtc).unresolvable.empty() ? 0 : 1;
  }
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      cubby::forget_header_scans();
      keys = std::make_unique<cubby::KeyDeriver>(fs::path(), tmp, too_new);
      std::error_code ignored;
      if (mode == Mode::fresh_watch) fs::remove_all(keys->scans().book()->folder(), ignored);
      state.ResumeTiming();
    }
    const std::uint64_t before = cubby::header_files_read();
    key_all();
    read += cubby::header_files_read() - before;
    ++rounds;
  }
  state.counters["headers_read"] =
      rounds == 0 ? 0.0 : static_cast<double>(read) / static_cast<double>(rounds);
  state.counters["programs"] = static_cast<double>(requests.size());
  state.counters["uncached"] = static_cast<double>(uncached);
  cubby::forget_header_scans();
  ::unsetenv("CUBBY_SCAN_WATCH");
}

}  // namespace

int main(int argc, char** argv) {
  for (const Programs* programs : {&kCupy25, &kComplex224}) {
    for (const auto& [name, mode] :
         {std::pair{"fresh_no_record", Mode::fresh_no_record},
          std::pair{"fresh_record", Mode::fresh_record}, std::pair{"warm", Mode::warm},
          std::pair{"fresh_watch", Mode::fresh_watch}, std::pair{"fresh_book", Mode::fresh_book},
          std::pair{"warm_watch", Mode::warm_watch},
          std::pair{"warm_planned", Mode::warm_planned}}) {
      benchmark::RegisterBenchmark(
          (std::string("BM_KeyScan/") + programs->name + "/" + name).c_str(),
          [mode = mode, programs](benchmark::State& state) { BM_KeyScan(state, mode, *programs); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ignored;
  for (const Programs* programs : {&kCupy25, &kComplex224}) {
    fs::remove_all(workload(*programs).root, ignored);
  }
  return 0;
}
