// Compiling a request with NVRTC: name expressions added, lowered names and the payload read back.
#include "cubby/nvrtc.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <string_view>

#include "cuda/compile_hook.hpp"
#include "cuda/nvrtc_compile.hpp"
#include "cuda/nvrtc_library.hpp"
#include "cuda/nvrtc_options.hpp"

namespace fs = std::filesystem;

namespace cubby {
namespace {

// Destroys a program on every path out of compile_nvrtc.
class ProgramGuard {
 public:
  ProgramGuard(const NvrtcApi& api, nvrtcProgram program) : api_(api), program_(program) {}
  ~ProgramGuard() {
    if (program_ != nullptr) api_.destroy_program(&program_);
  }
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;

 private:
  const NvrtcApi& api_;
  nvrtcProgram program_;
};

std::string program_log(const NvrtcApi& api, nvrtcProgram program) {
  std::size_t size = 0;
  if (api.get_log_size(program, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (api.get_log(program, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

bool is_arch_option(const std::string& option) {
  for (std::string_view flag :
       {std::string_view("-arch"), std::string_view("--gpu-architecture")}) {
    if (option.rfind(flag, 0) != 0) continue;
    if (option.size() == flag.size()) return true;
    const char next = option[flag.size()];
    if (next == '=' || next == ' ' || next == '\t') return true;
  }
  return false;
}

bool has_nul(std::string_view text) { return text.find('\0') != std::string_view::npos; }

// The request's distinct name expressions in order, after checking what NVRTC cannot take: a
// missing or unknown architecture, an architecture among the options, NUL bytes, an empty name
// expression.
Result<std::vector<std::string>> checked_expressions(const CompileRequest& request) {
  if (request.arch.empty()) {
    return fail(Errc::invalid_argument, "no target architecture for ", request.program_name,
                ": set CompileRequest::arch (e.g. \"sm_90\" for a CUBIN, \"compute_90\" for PTX).");
  }
  if (request.arch.rfind("sm_", 0) != 0 && request.arch.rfind("compute_", 0) != 0) {
    return fail(Errc::invalid_argument, "unknown target architecture \"", request.arch, "\" for ",
                request.program_name, ": use sm_XX (CUBIN) or compute_XX (PTX), e.g. sm_90.");
  }
  for (const std::string& option : request.options) {
    if (is_arch_option(option)) {
      return fail(
          Errc::invalid_argument, "the option \"", option, "\" sets the architecture of ",
          request.program_name,
          "; remove it from the options and pass the architecture separately (arch / --arch).");
    }
    if (has_nul(option)) {
      return fail(Errc::invalid_argument, "an option of ", request.program_name,
                  " contains a NUL byte; NVRTC options are C strings.");
    }
  }
  if (has_nul(request.source) || has_nul(request.program_name)) {
    return fail(Errc::invalid_argument, "the source or name of ", request.program_name,
                " contains a NUL byte; NVRTC takes C strings.");
  }
  std::vector<std::string> expressions;
  std::set<std::string> seen;
  for (const std::string& expression : request.name_expressions) {
    if (expression.empty() || has_nul(expression)) {
      return fail(Errc::invalid_argument,
                  "an empty name expression (or one with a NUL byte) was given for ",
                  request.program_name,
                  "; name a __global__ function or __device__ variable, e.g. ns::k<float>.");
    }
    if (seen.insert(expression).second) expressions.push_back(expression);
  }
  return expressions;
}

// The failure of a compile that did not succeed (`rc`), NVRTC's log as its field. NVRTC reports a
// bad name expression as a compile error at "#pragma nv_mangled_name <expr>": those are named.
Failure compile_failure(const NvrtcApi& api, nvrtcResult rc, const CompileRequest& request,
                        const std::vector<std::string>& expressions, std::string log) {
  if (rc == NVRTC_ERROR_INVALID_OPTION) {
    return fail(Errc::invalid_argument, "NVRTC rejected an option of ", request.program_name, " (",
                api.describe(rc), "); check the options and the architecture \"", request.arch,
                "\":\n", log);
  }
  std::string bad_expressions;
  for (const std::string& expression : expressions) {
    if (log.find("nv_mangled_name " + expression + "\n") != std::string::npos) {
      bad_expressions += (bad_expressions.empty() ? "" : ", ") + ("\"" + expression + "\"");
    }
  }
  if (!bad_expressions.empty()) {
    log += "\n(cubby: NVRTC could not resolve the name expression(s) " + bad_expressions +
           "; each must name a __global__ function or a __device__ variable, e.g. ns::k<float>.)";
  }
  if (log.empty()) log = api.describe(rc);
  Failure failure =
      fail(Errc::compile_failed, "NVRTC could not compile ", request.program_name, ":\n", log);
  failure.log = std::move(log);
  return failure;
}

// The lowered name of each expression of a compiled program, into `entry.lowered_names`.
Result<void> read_lowered_names(const NvrtcApi& api, nvrtcProgram program,
                                const CompileRequest& request,
                                const std::vector<std::string>& expressions, Entry& entry) {
  for (const std::string& expression : expressions) {
    const char* lowered = nullptr;
    const nvrtcResult rc = api.get_lowered_name(program, expression.c_str(), &lowered);
    if (rc != NVRTC_SUCCESS || lowered == nullptr || *lowered == '\0') {
      return fail(
          Errc::invalid_argument,
          "NVRTC found no kernel or __device__ variable for the name expression \"", expression,
          "\" in ", request.program_name, " (",
          rc != NVRTC_SUCCESS ? api.describe(rc) : std::string("empty lowered name"),
          "); check its spelling and template arguments, e.g. ns::k<float>, &ns::table<int>.");
    }
    entry.lowered_names.emplace(expression, lowered);
  }
  return {};
}

// The payload of kind `kind` of a compiled program, into `entry.payload` (PTX without NVRTC's
// terminating NUL: it is text).
Result<void> read_payload(const NvrtcApi& api, nvrtcProgram program, PayloadKind kind,
                          const CompileRequest& request, Entry& entry) {
  using SizeFn = nvrtcResult (*)(nvrtcProgram, std::size_t*);
  using GetFn = nvrtcResult (*)(nvrtcProgram, char*);
  SizeFn size_fn = api.get_cubin_size;
  GetFn get_fn = api.get_cubin;
  if (kind == PayloadKind::ptx) {
    size_fn = api.get_ptx_size;
    get_fn = api.get_ptx;
  } else if (kind == PayloadKind::ltoir) {
    size_fn = api.get_ltoir_size;
    get_fn = api.get_ltoir;
  }
  std::size_t size = 0;
  nvrtcResult rc = size_fn(program, &size);
  if (rc == NVRTC_SUCCESS && size > 0) {
    entry.payload.resize(size);
    rc = get_fn(program, entry.payload.data());
  }
  if (rc != NVRTC_SUCCESS || size == 0) {
    return fail(Errc::compile_failed, "NVRTC compiled ", request.program_name, " but gave no ",
                kind == PayloadKind::ptx     ? "PTX"
                : kind == PayloadKind::ltoir ? "LTO-IR"
                                             : "CUBIN",
                " (", rc != NVRTC_SUCCESS ? api.describe(rc) : std::string("empty payload"),
                "); check that the options and the architecture \"", request.arch, "\" agree.");
  }
  if (kind == PayloadKind::ptx) {
    while (!entry.payload.empty() && entry.payload.back() == '\0') entry.payload.pop_back();
  }
  return {};
}

// The line of `text` that holds `word` first (without its newline); empty if none does.
std::string line_containing(const std::string& text, std::string_view word) {
  const std::size_t at = text.find(word);
  if (at == std::string::npos) return {};
  const std::size_t newline = text.rfind('\n', at);
  const std::size_t start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, text.find('\n', at) - start);
}

// Whether `options` choose precompiled headers themselves (one of NVRTC's PCH options, any
// spelling of nvrtc_options.cpp's table).
bool chooses_pch(const std::vector<std::string>& options) {
  return any_nvrtc_option(options, [](const NvrtcOption& row) {
    return row.long_name.find("pch") != std::string_view::npos;
  });
}

// The options that ask NVRTC for automatic PCH in `dir` (they must come first). Its messages stay
// on (they say whether a PCH was created or used); why a PCH could not be used is not logged.
std::vector<std::string> pch_options(const fs::path& dir) {
  return {"-pch", "--pch-dir=" + dir.string(), "--pch-verbose=false"};
}

// Removes NVRTC's PCH messages about files in `dir` from `log` and says what they reported.
void take_pch_messages(std::string& log, const fs::path& dir, PchOutcome& pch) {
  const std::string in_dir = "precompiled header file \"" + dir.string();
  std::string kept;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    end = end == std::string::npos ? log.size() : end + 1;
    const std::string_view line(log.data() + start, end - start);
    const std::size_t at = line.find(in_dir);
    if (at == std::string_view::npos) {
      kept.append(line);
    } else if (line.substr(0, at).ends_with("creating ")) {
      pch.created = true;
    } else if (line.substr(0, at).ends_with("using ")) {
      pch.reused = true;
    }
    start = end;
  }
  while (kept.ends_with("\n\n")) kept.pop_back();
  if (kept == "\n") kept.clear();
  log = std::move(kept);
}

// After a successful compile that asked for PCH: an exhausted PCH heap is grown to what NVRTC
// needs, once per size, so that the next compile creates the PCH; a heap that cannot grow ends
// PCH for the process.
void grow_pch_heap_if_exhausted(const NvrtcApi& api, nvrtcProgram program, PchOutcome& pch) {
  if (api.get_pch_create_status(program) != NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED) return;
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  std::size_t needed = 0;
  std::size_t current = 0;
  if (api.get_pch_heap_size_required(program, &needed) != NVRTC_SUCCESS ||
      api.get_pch_heap_size(&current) != NVRTC_SUCCESS) {
    pch.failed = true;
    pch.why = "its heap size is unknown";
    return;
  }
  if (needed <= current) return;  // grown meanwhile by another thread's compile
  if (api.set_pch_heap_size(needed) != NVRTC_SUCCESS) {
    pch.failed = true;
    pch.why = "its heap could not grow to " + std::to_string(needed) + " bytes";
    return;
  }
  pch.grown = true;
}

// compile_nvrtc's work under `plan`: with PCH in `pch_dir` unless it is empty (then `pch` is not
// touched).
Result<Entry> compile(const CompileRequest& request, const IncludePlan& plan,
                      const fs::path& pch_dir, PchOutcome& pch);

// The include plan of `request` under the located NVRTC's include folder (none when NVRTC is not
// found: the compile then fails on loading it).
IncludePlan plan_of(const CompileRequest& request) {
  const auto library = locate_nvrtc();
  return plan_includes(request, library.ok() ? library->include_dir : fs::path());
}

CompileHook& compile_hook() {
  static CompileHook* hook = new CompileHook();  // never destroyed: compiles may run at exit
  return *hook;
}

}  // namespace

void set_compile_hook_for_testing(CompileHook hook) { compile_hook() = std::move(hook); }

PayloadKind payload_kind_for(const std::string& arch, const std::vector<std::string>& options) {
  // NVRTC 13.0 accepts -dlto and its long name --dlink-time-opt (the table's -dlto rows).
  if (any_nvrtc_option(options, [](const NvrtcOption& row) { return row.short_name == "-dlto"; })) {
    return PayloadKind::ltoir;
  }
  if (arch.rfind("compute_", 0) == 0) return PayloadKind::ptx;
  return PayloadKind::cubin;
}

Result<Entry> compile_nvrtc(const CompileRequest& request) {
  PchOutcome unused;
  return compile(request, plan_of(request), fs::path(), unused);
}

Result<Entry> compile_nvrtc(const CompileRequest& request, const fs::path& pch_dir,
                            PchOutcome& pch) {
  return compile_nvrtc(request, plan_of(request), pch_dir, pch);
}

Result<Entry> compile_nvrtc(const CompileRequest& request, const IncludePlan& plan,
                            const fs::path& pch_dir, PchOutcome& pch) {
  pch = PchOutcome{};
  auto compiled = compile(request, plan, pch_dir, pch);
  if (compiled || !pch.requested) return compiled;
  const std::string& log = compiled.error().log;
  pch.why = line_containing(log, "PCH");
  if (pch.why.empty()) pch.why = line_containing(log, "precompiled header");
  if (pch.why.empty()) return compiled;  // the program's own error
  pch.failed = true;
  pch.created = pch.reused = false;  // whatever it said, the compile that counts is the next one
  PchOutcome without;
  return compile(request, plan, fs::path(), without);
}

namespace {

Result<Entry> compile(const CompileRequest& request, const IncludePlan& plan,
                      const fs::path& pch_dir, PchOutcome& pch) {
  auto expressions = checked_expressions(request);
  if (!expressions.ok()) return std::move(expressions).error();
  const auto& loaded = nvrtc_api();
  if (!loaded.ok()) return loaded.error();
  const NvrtcApi& api = loaded.value();

  const PayloadKind kind = payload_kind_for(request.arch, request.options);
  const std::string arch_option = "--gpu-architecture=" + request.arch;
  pch.requested = !pch_dir.empty() && api.supports_pch() && !chooses_pch(request.options);
  std::vector<std::string> nvrtc_options =
      pch.requested ? pch_options(pch_dir) : std::vector<std::string>();
  nvrtc_options.insert(nvrtc_options.end(), plan.options.begin(), plan.options.end());
  nvrtc_options.push_back(arch_option);
  std::vector<const char*> option_pointers;
  option_pointers.reserve(nvrtc_options.size());
  for (const std::string& option : nvrtc_options) option_pointers.push_back(option.c_str());

  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  nvrtcResult rc = api.create_program(&program, request.source.c_str(),
                                      request.program_name.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    return fail(rc == NVRTC_ERROR_OUT_OF_MEMORY ? Errc::compile_failed : Errc::invalid_argument,
                "NVRTC could not create the program ", request.program_name, ": ",
                api.describe(rc));
  }
  ProgramGuard guard(api, program);
  for (const std::string& expression : *expressions) {
    rc = api.add_name_expression(program, expression.c_str());
    if (rc != NVRTC_SUCCESS) {
      return fail(Errc::invalid_argument, "NVRTC rejected the name expression \"", expression,
                  "\" of ", request.program_name, ": ", api.describe(rc),
                  ". Name a __global__ function or __device__ variable, e.g. ns::k<float>.");
    }
  }
  if (const CompileHook& hook = compile_hook()) hook(request);
  rc = api.compile_program(program, static_cast<int>(option_pointers.size()),
                           option_pointers.data());
  std::string log = program_log(api, program);
  if (pch.requested) take_pch_messages(log, pch_dir, pch);
  if (rc != NVRTC_SUCCESS) return compile_failure(api, rc, request, *expressions, std::move(log));
  if (pch.requested) grow_pch_heap_if_exhausted(api, program, pch);

  Entry entry;
  if (auto named = read_lowered_names(api, program, request, *expressions, entry); !named.ok()) {
    return std::move(named).error();
  }
  if (auto payload = read_payload(api, program, kind, request, entry); !payload.ok()) {
    return std::move(payload).error();
  }
  const auto stop = std::chrono::steady_clock::now();

  entry.kind = kind;
  entry.log = std::move(log);
  entry.compile_us = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(stop - start).count());
  entry.options = request.options;
  entry.options.push_back(arch_option);
  entry.created_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  return entry;
}

}  // namespace
}  // namespace cubby
