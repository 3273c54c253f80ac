// Kernels on CUB block and warp primitives, libcu++ (cuda::std) and thrust, compiled against a
// vendored CCCL: a copy of the toolkit's include/cccl beside this binary (vendored-cccl/, made
// when the build is configured) passed with -I, as a project that ships its own CCCL does (CuPy
// bundles one). The key's scan reads those headers as user headers, including the computed
// includes (#include MACRO) of thrust's iterators, which CUB's headers reach too, so every program
// must still be served from the store:
// CcclCompile compiles each program through the shared store (CTest runs it once as a warm-up,
// then every test with --cubby_require_warm); CcclStore compiles each on a fresh store with one
// Cache and looks it up with another (the second pass must be a disk hit, 0 compiles); CcclGpu
// launches every kernel and checks its results (skips without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "cubby/cache.hpp"
#include "cubby/config.hpp"
#include "cubby/testing/gtest.hpp"

namespace cubby::examples {
namespace {

namespace fs = std::filesystem;

constexpr int kThreads = 128;  // the block size of the block kernels
constexpr int kBlocks = 4;

// The vendored CCCL: $CUBBY_VENDORED_CCCL, else vendored-cccl/ beside this binary (the build
// copies it there, and a build folder moved to another machine keeps it beside the binary).
fs::path vendored_cccl() {
  if (const char* explicit_dir = std::getenv("CUBBY_VENDORED_CCCL")) return explicit_dir;
  return fs::read_symlink("/proc/self/exe").parent_path() / "vendored-cccl";
}

const char* const kSource = R"cuda(#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/functional>
#include <cuda/std/array>
#include <cuda/std/span>
#include <cuda/std/type_traits>
#include <thrust/iterator/counting_iterator.h>

namespace example {

// out[b] = the sum and max[b] = the largest of in[b * Threads, (b + 1) * Threads).
template <class T, int Threads>
__global__ void block_reduce(const T* in, T* sum, T* max) {
  static_assert(cuda::std::is_arithmetic_v<T>, "numbers only");
  using Reduce = cub::BlockReduce<T, Threads>;
  __shared__ typename Reduce::TempStorage storage;
  const T value = in[blockIdx.x * Threads + threadIdx.x];
  const T total = Reduce(storage).Sum(value);
  __syncthreads();
  const T largest = Reduce(storage).Reduce(value, cuda::maximum<>{});
  if (threadIdx.x == 0) {
    sum[blockIdx.x] = total;
    max[blockIdx.x] = largest;
  }
}

// out[i] = the sum of in[b * Threads, i) (an exclusive scan within each block).
template <class T, int Threads>
__global__ void block_exclusive_sum(const T* in, T* out) {
  using Scan = cub::BlockScan<T, Threads>;
  __shared__ typename Scan::TempStorage storage;
  const int i = blockIdx.x * Threads + threadIdx.x;
  T value = in[i];
  Scan(storage).ExclusiveSum(value, value);
  out[i] = value;
}

// Within each warp of 32: prefix[i] = the inclusive sum up to i, total[w] = the warp's sum.
template <class T>
__global__ void warp_sums(const T* in, T* prefix, T* total) {
  constexpr int kWarps = 4;
  __shared__ typename cub::WarpScan<T>::TempStorage scan[kWarps];
  __shared__ typename cub::WarpReduce<T>::TempStorage reduce[kWarps];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int warp = threadIdx.x / 32;
  T value = in[i];
  const T sum = cub::WarpReduce<T>(reduce[warp]).Sum(value);
  cub::WarpScan<T>(scan[warp]).InclusiveSum(value, value);
  prefix[i] = value;
  if (threadIdx.x % 32 == 0) total[i / 32] = sum;
}

template <class T>
struct Square {
  __host__ __device__ T operator()(T x) const { return x * x; }
};

// out[i] = (first + i)^2 for i < n: thrust's counting iterator, written through a cuda::std::span.
template <class T>
__global__ void squares(T first, T* out, int n) {
  const cuda::std::span<T> target(out, static_cast<cuda::std::size_t>(n));
  const thrust::counting_iterator<T> values(first);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) target[i] = Square<T>{}(values[i]);
}

}  // namespace example
)cuda";

struct CcclProgram {
  std::string name;  // a valid gtest parameter name
  std::vector<std::string> name_expressions;
};

// GoogleTest prints a parameter by its name.
void PrintTo(const CcclProgram& program, std::ostream* out) { *out << program.name; }

std::vector<CcclProgram> cccl_programs() {
  const std::string threads = std::to_string(kThreads);
  return {
      {"block",
       {"example::block_reduce<float, " + threads + ">",
        "example::block_reduce<int, " + threads + ">",
        "example::block_reduce<double, " + threads + ">",
        "example::block_exclusive_sum<int, " + threads + ">",
        "example::block_exclusive_sum<long long, " + threads + ">"}},
      {"warp", {"example::warp_sums<int>", "example::warp_sums<float>"}},
      {"thrust", {"example::squares<int>", "example::squares<long long>"}},
  };
}

CompileRequest request_for(const CcclProgram& program) {
  CompileRequest request;
  request.source = kSource;
  request.program_name = "cccl_" + program.name + ".cu";
  request.name_expressions = program.name_expressions;
  request.options = {"-std=c++17", "-I" + vendored_cccl().string()};
  return request;
}

std::string program_name(const ::testing::TestParamInfo<CcclProgram>& info) {
  return info.param.name;
}

class CcclCompile : public cubby::testing::KernelTest,
                    public ::testing::WithParamInterface<CcclProgram> {};

TEST_P(CcclCompile, EveryKernelHasItsLoweredName) {
  ASSERT_TRUE(fs::is_directory(vendored_cccl() / "cub"))
      << vendored_cccl() << " holds no CCCL: configure the build again (it copies the toolkit's "
      << "include/cccl there) or set CUBBY_VENDORED_CCCL";
  const auto module = compile(request_for(GetParam()));
  for (const std::string& expression : GetParam().name_expressions) {
    EXPECT_FALSE(module->lowered_name(expression).empty()) << expression;
  }
}

INSTANTIATE_TEST_SUITE_P(Cccl, CcclCompile, ::testing::ValuesIn(cccl_programs()), program_name);

// A fresh store folder under the system's temporary folder, removed at the end.
class FreshStore {
 public:
  FreshStore() {
    static std::atomic<int> count{0};
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    dir_ = fs::temp_directory_path() /
           ("cubby-cccl-" + std::to_string(stamp) + "-" + std::to_string(count++));
  }
  FreshStore(const FreshStore&) = delete;
  FreshStore& operator=(const FreshStore&) = delete;
  ~FreshStore() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  Config config() const {
    Config config;
    config.dir = dir_;
    config.prefetch = false;
    return config;
  }

 private:
  fs::path dir_;
};

class CcclStore : public ::testing::TestWithParam<CcclProgram> {};

TEST_P(CcclStore, ASecondPassIsServedFromTheStoreWithoutCompiling) {
  const FreshStore store;
  const CompileRequest request = request_for(GetParam());
  {
    Cache first(store.config());
    const CacheResult compiled = first.compile(request);
    EXPECT_FALSE(compiled.hit);
    EXPECT_EQ(first.stats().compiles, 1u);
  }
  Cache second(store.config());
  const CacheResult served = second.compile(request);
  EXPECT_TRUE(served.hit) << "the second pass compiled (tier " << source_name(served.tier)
                          << "): a header the program reaches was not keyed";
  EXPECT_STREQ(source_name(served.tier), "disk");
  EXPECT_EQ(second.stats().compiles, 0u);
  EXPECT_EQ(second.stats().hits_disk, 1u);
}

INSTANTIATE_TEST_SUITE_P(Cccl, CcclStore, ::testing::ValuesIn(cccl_programs()), program_name);

const CcclProgram& program_named(const std::string& name) {
  static const std::vector<CcclProgram> programs = cccl_programs();
  for (const CcclProgram& program : programs) {
    if (program.name == name) return program;
  }
  throw std::invalid_argument("no program " + name);
}

class CcclGpu : public cubby::testing::GpuKernelTest {};

TEST_F(CcclGpu, BlockReduceSumsAndMaximaMatchTheHost) {
  const auto module = compile(request_for(program_named("block")));
  std::vector<int> host(kBlocks * kThreads);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = int((i * 7919) % 1000) - 500;
  cubby::testing::DeviceArray<int> in(host);
  cubby::testing::DeviceArray<int> sum(kBlocks);
  cubby::testing::DeviceArray<int> max(kBlocks);
  module->launch("example::block_reduce<int, " + std::to_string(kThreads) + ">", {kBlocks},
                 {kThreads}, in.get(), sum.get(), max.get());
  const std::vector<int> sums = sum.to_host();
  const std::vector<int> maxima = max.to_host();
  for (int b = 0; b < kBlocks; ++b) {
    const auto first = host.begin() + b * kThreads;
    EXPECT_EQ(sums[b], std::accumulate(first, first + kThreads, 0)) << "block " << b;
    EXPECT_EQ(maxima[b], *std::max_element(first, first + kThreads)) << "block " << b;
  }
}

TEST_F(CcclGpu, BlockScanGivesExclusivePrefixSums) {
  const auto module = compile(request_for(program_named("block")));
  std::vector<long long> host(kBlocks * kThreads);
  for (std::size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<long long>(i % 13) * 1000000007LL;
  cubby::testing::DeviceArray<long long> in(host);
  cubby::testing::DeviceArray<long long> out(host.size());
  module->launch("example::block_exclusive_sum<long long, " + std::to_string(kThreads) + ">",
                 {kBlocks}, {kThreads}, in.get(), out.get());
  const std::vector<long long> result = out.to_host();
  for (int b = 0; b < kBlocks; ++b) {
    long long running = 0;
    for (int t = 0; t < kThreads; ++t) {
      const std::size_t i = std::size_t(b) * kThreads + std::size_t(t);
      EXPECT_EQ(result[i], running) << "element " << i;
      running += host[i];
    }
  }
}

TEST_F(CcclGpu, WarpScanAndReduceWorkPerWarp) {
  const auto module = compile(request_for(program_named("warp")));
  std::vector<int> host(kThreads);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = int(i % 9) - 3;
  cubby::testing::DeviceArray<int> in(host);
  cubby::testing::DeviceArray<int> prefix(host.size());
  cubby::testing::DeviceArray<int> total(host.size() / 32);
  module->launch("example::warp_sums<int>", {1}, {kThreads}, in.get(), prefix.get(), total.get());
  const std::vector<int> prefixes = prefix.to_host();
  const std::vector<int> totals = total.to_host();
  for (std::size_t w = 0; w < host.size() / 32; ++w) {
    int running = 0;
    for (std::size_t lane = 0; lane < 32; ++lane) {
      running += host[w * 32 + lane];
      EXPECT_EQ(prefixes[w * 32 + lane], running) << "warp " << w << " lane " << lane;
    }
    EXPECT_EQ(totals[w], running) << "warp " << w;
  }
}

TEST_F(CcclGpu, ThrustIteratorsGiveSquares) {
  const auto module = compile(request_for(program_named("thrust")));
  const int count = 300;
  cubby::testing::DeviceArray<long long> out(count);
  module->launch("example::squares<long long>", {3}, {kThreads}, -100LL, out.get(), count);
  std::vector<long long> expected(count);
  for (int i = 0; i < count; ++i) expected[i] = (i - 100LL) * (i - 100LL);
  EXPECT_EQ(out.to_host(), expected);
}

}  // namespace
}  // namespace cubby::examples
