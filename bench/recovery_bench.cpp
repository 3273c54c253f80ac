// Google Benchmark suite of name recovery: speed and accuracy of recovering lowered names from
// a CUBIN in memory, per workload and method.
//
//   BM_NameRecovery/<workload>/matcher         cubby's matcher (ELF symbols, mangled names parsed
//                                              directly, abi::__cxa_demangle as fallback): the
//                                              lowered names, as the cache recovers them
//   BM_NameRecovery/<workload>/matcher_text    the same plus each answer's demangled text, as
//                                              `cubby recover` prints it
//   BM_NameRecovery/<workload>/matcher_cufilt  the same with the toolkit's demangler (if linked)
//   BM_NameRecovery/<workload>/baseline        demangle, strip, compare text
//   BM_NameRecovery/<workload>/driver          GPU: cuModuleLoadData + cuModuleEnumerateFunctions +
//                                              cuFuncGetName + matcher (variables from the ELF)
//   BM_NameRecovery/<workload>/load_only       GPU: cuModuleLoadData + unload, the reference for
//                                              `driver` in the same run
// Workloads: mdspan50 (bench/workloads/cubby_workloads.hpp) and the accuracy corpus
// (bench/workloads/recovery_corpus.hpp). Counters: expressions (= total), correct, unresolved,
// wrong (against NVRTC's own lowered names) and accuracy = correct / total. Each iteration recovers
// every expression of the workload from the CUBIN bytes (ELF read + demangle + parse + match).
//
// `cubby_recovery_bench --accuracy_table` prints the accuracy table (markdown) and exits;
// `--accuracy_details` also lists every unresolved (with the reason) or wrong answer on stderr.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cubby/cubin.hpp"
#include "cubby/driver.hpp"
#include "cubby/nvrtc.hpp"
#include "cubby/recover.hpp"
#include "cubby_workloads.hpp"
#include "recovery_corpus.hpp"

namespace {

using cubby::recovery::RecoveryWorkload;
using cubby::recovery::Score;

struct Compiled {
  RecoveryWorkload workload;
  std::shared_ptr<const cubby::Entry> entry;
  std::string error;  // compile failure, reported by every family of the workload
};

Compiled compile(RecoveryWorkload workload, const std::string& arch) {
  Compiled out;
  auto entry = cubby::compile_nvrtc(cubby::recovery::compile_request(workload, arch));
  if (entry.ok()) {
    out.entry = std::make_shared<const cubby::Entry>(std::move(entry.value()));
  } else {
    out.error = entry.error().message;
  }
  out.workload = std::move(workload);
  return out;
}

enum class Method { matcher, matcher_text, matcher_cufilt, baseline, driver, load_only };

std::vector<std::string> answer(Method method, const cubby::CubinSymbols& symbols,
                                const std::vector<std::string>& expressions) {
  switch (method) {
    case Method::baseline:
      return cubby::recovery::recover_with_baseline(symbols, expressions);
    case Method::matcher_cufilt:
      return cubby::recovery::recover_with_matcher(symbols, expressions, cubby::Demangler::cufilt);
    case Method::matcher_text: {
      std::vector<std::string> out;
      for (const cubby::RecoveredName& name : cubby::recover_names(symbols, expressions)) {
        out.push_back(name.resolved && !name.demangled.empty() ? name.mangled : std::string());
      }
      return out;
    }
    default:
      return cubby::recovery::recover_with_matcher(symbols, expressions);
  }
}

void set_counters(benchmark::State& state, const Score& s) {
  state.counters["expressions"] = static_cast<double>(s.total());
  state.counters["correct"] = static_cast<double>(s.correct);
  state.counters["unresolved"] = static_cast<double>(s.unresolved);
  state.counters["wrong"] = static_cast<double>(s.wrong);
  state.counters["total"] = static_cast<double>(s.total());
  state.counters["accuracy"] =
      s.total() == 0 ? 0.0 : static_cast<double>(s.correct) / static_cast<double>(s.total());
}

void BM_NameRecovery(benchmark::State& state, const Compiled* compiled, Method method) {
  if (!compiled->error.empty()) {
    state.SkipWithError(("compile failed: " + compiled->error.substr(0, 400)).c_str());
    return;
  }
  const cubby::Entry& entry = *compiled->entry;
  const auto& expressions = compiled->workload.expressions;
  const bool gpu = method == Method::driver || method == Method::load_only;
  if (gpu) {
    auto status = cubby::gpu_status();
    if (!status.ok()) {
      state.SkipWithError(("skipped: no GPU (" + status.error().message + ")").c_str());
      return;
    }
  }
  std::vector<std::string> answers;
  for (auto _ : state) {
    if (method == Method::load_only) {
      cubby::Module module(compiled->entry);
      benchmark::DoNotOptimize(module.native());
      continue;
    }
    if (method == Method::driver) {
      cubby::Module module(compiled->entry);
      cubby::CubinSymbols symbols;
      symbols.kernels = module.enumerate_kernels();
      symbols.variables = cubby::read_cubin_symbols(entry.payload).value_or_throw().variables;
      answers = answer(method, symbols, expressions);
    } else if (method == Method::matcher || method == Method::matcher_text) {
      // As the cache recovers: straight from the CUBIN bytes (recover.hpp).
      const auto text = method == Method::matcher ? cubby::RecoveredText::mangled_only
                                                  : cubby::RecoveredText::demangled;
      auto recovered = cubby::recover_names(std::string_view(entry.payload), expressions,
                                            cubby::Demangler::cxa, text);
      if (!recovered.ok()) {
        state.SkipWithError(recovered.error().message.c_str());
        return;
      }
      answers.clear();
      for (const cubby::RecoveredName& name : *recovered) {
        const bool shown = name.resolved && (method == Method::matcher || !name.demangled.empty());
        answers.push_back(shown ? name.mangled : std::string());
      }
    } else {
      auto symbols = cubby::read_cubin_symbols(entry.payload);
      if (!symbols.ok()) {
        state.SkipWithError(symbols.error().message.c_str());
        return;
      }
      answers = answer(method, *symbols, expressions);
    }
    benchmark::DoNotOptimize(answers.data());
  }
  if (method != Method::load_only) {
    set_counters(state, cubby::recovery::score(expressions, answers, entry.lowered_names));
  }
}

const char* method_name(Method method) {
  switch (method) {
    case Method::matcher:
      return "matcher";
    case Method::matcher_text:
      return "matcher_text";
    case Method::matcher_cufilt:
      return "matcher_cufilt";
    case Method::baseline:
      return "baseline";
    case Method::driver:
      return "driver";
    case Method::load_only:
      return "load_only";
  }
  return "unknown";
}

RecoveryWorkload mdspan50_workload() {
  const cubby::workloads::Workload w = cubby::workloads::mdspan50();
  RecoveryWorkload out;
  out.name = w.name;
  out.source = w.source;
  out.expressions = w.name_expressions;
  out.options = w.options;
  return out;
}

// The accuracy table over every workload (markdown), and the corpus total.
int print_accuracy_table(const std::vector<std::unique_ptr<Compiled>>& all, bool details) {
  std::printf(
      "| workload | expressions | cubby matcher: correct / unresolved / wrong | "
      "baseline (demangle, strip, compare text): correct / unresolved / wrong |\n");
  std::printf("| --- | ---: | ---: | ---: |\n");
  Score total_matcher;
  Score total_baseline;
  bool failed = false;
  for (const auto& compiled : all) {
    if (!compiled->error.empty()) {
      std::fprintf(stderr, "%s: compile failed: %s\n", compiled->workload.name.c_str(),
                   compiled->error.c_str());
      failed = true;
      continue;
    }
    const auto& expressions = compiled->workload.expressions;
    const auto symbols = cubby::read_cubin_symbols(compiled->entry->payload).value_or_throw();
    const auto& truth = compiled->entry->lowered_names;
    const Score m = cubby::recovery::score(
        expressions, cubby::recovery::recover_with_matcher(symbols, expressions), truth);
    if (details) {
      for (const cubby::RecoveredName& name : cubby::recover_names(symbols, expressions)) {
        if (!name.resolved) {
          std::fprintf(stderr, "unresolved %s: %s\n", name.expression.c_str(), name.reason.c_str());
        } else if (name.mangled != truth.at(name.expression)) {
          std::fprintf(stderr, "WRONG %s: %s\n", name.expression.c_str(), name.mangled.c_str());
        }
      }
    }
    const Score b = cubby::recovery::score(
        expressions, cubby::recovery::recover_with_baseline(symbols, expressions), truth);
    std::printf("| %s | %zu | %zu / %zu / %zu | %zu / %zu / %zu |\n",
                compiled->workload.name.c_str(), expressions.size(), m.correct, m.unresolved,
                m.wrong, b.correct, b.unresolved, b.wrong);
    if (compiled->workload.name != "mdspan50") {
      total_matcher.correct += m.correct;
      total_matcher.unresolved += m.unresolved;
      total_matcher.wrong += m.wrong;
      total_baseline.correct += b.correct;
      total_baseline.unresolved += b.unresolved;
      total_baseline.wrong += b.wrong;
    }
  }
  std::printf("| **corpus total** | %zu | %zu / %zu / %zu | %zu / %zu / %zu |\n",
              total_matcher.total(), total_matcher.correct, total_matcher.unresolved,
              total_matcher.wrong, total_baseline.correct, total_baseline.unresolved,
              total_baseline.wrong);
  return failed ? 1 : 0;
}

}  // namespace

// A failing setup (no NVRTC, a workload that does not compile) ends the run through
// std::terminate, which prints the exception's message: what a benchmark should do.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  bool table = false;
  bool details = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--accuracy_table") == 0) {
      table = true;
    } else if (std::strcmp(argv[i], "--accuracy_details") == 0) {
      table = true;
      details = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;

  std::string arch = "sm_90";
  if (auto gpu = cubby::gpu_arch(); gpu.ok()) arch = *gpu;
  static std::vector<std::unique_ptr<Compiled>> compiled;
  compiled.push_back(std::make_unique<Compiled>(compile(mdspan50_workload(), arch)));
  for (auto& workload : cubby::recovery::recovery_workloads()) {
    compiled.push_back(std::make_unique<Compiled>(compile(std::move(workload), arch)));
  }
  if (table) return print_accuracy_table(compiled, details);

  std::vector<Method> methods = {Method::matcher, Method::matcher_text, Method::baseline,
                                 Method::driver, Method::load_only};
  if (cubby::cufilt_available()) methods.insert(methods.begin() + 2, Method::matcher_cufilt);
  for (const auto& c : compiled) {
    for (Method method : methods) {
      const std::string name = "BM_NameRecovery/" + c->workload.name + "/" + method_name(method);
      benchmark::RegisterBenchmark(name.c_str(), BM_NameRecovery, c.get(), method)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
