// The one parser of NVRTC's include options and the include plan of a request.
#include "cuda/include_plan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "cuda/nvrtc_options.hpp"

namespace cubby {

namespace fs = std::filesystem;

namespace {

// The include options, each with its spellings (NVRTC 13.0, verified by compiling):
//   include path   -I DIR, -IDIR, -I=DIR, --include-path DIR, --include-path=DIR
//   pre-include    -include F, -include=F, --pre-include F, --pre-include=F
//   define         -D X, -DX, -D=X, --define-macro X, --define-macro=X (read, passed verbatim)
//   flag           -no-source-include, --no-source-include
// ("-includeF", "-include-path=D", "--include=F" are rejected by NVRTC.)
struct IncludeOptionForm {
  std::string_view short_name;
  std::string_view long_name;
  bool glued;  // the short form also takes its value glued on: -IDIR
};
constexpr IncludeOptionForm kIncludePathForm{"-I", "--include-path", true};
constexpr IncludeOptionForm kPreIncludeForm{"-include", "--pre-include", false};
constexpr IncludeOptionForm kDefineForm{"-D", "--define-macro", true};

// Front-end options passed with `-Xcudafe X` / `-Xcudafe=X` (NVRTC 13.0, checked by compiling):
// NVRTC hands the values of every -Xcudafe, in order, to the front end as one argument list, so
// `-Xcudafe --preinclude -Xcudafe F` is `--preinclude F`. Those that change which headers are
// read are modelled (`--preinclude=F`, `--include_directory=D`, `--sys_include=D` with `=` or a
// separate value, `-ID`); those below change no header set and stay plain options; any other
// front-end option may read files the scan cannot see: the program is not cacheable.
constexpr std::string_view kCudafeIncludePaths[] = {"--include_directory", "--sys_include"};
constexpr std::string_view kCudafePreInclude = "--preinclude";
constexpr std::string_view kCudafeHarmless[] = {
    "--diag_suppress",        "--diag_warning",
    "--diag_error",           "--diag_remark",
    "--display_error_number", "--no_display_error_number",
    "--error_output",         "--brief_diagnostics",
    "--no_brief_diagnostics", "--remarks",
    "--no_remarks",           "--wrap_diagnostics",
    "--no_wrap_diagnostics",  "--error_limit",
    "--no_warnings",
};

constexpr std::string_view kCudafeHarmlessWithValue[] = {
    "--diag_suppress", "--diag_warning", "--diag_error",
    "--diag_remark",   "--error_output", "--error_limit",
};

// Whether `option` is `name` or `name=...`.
bool names_option(std::string_view option, std::string_view name) {
  return option == name ||
         (option.starts_with(name) && option.size() > name.size() && option[name.size()] == '=');
}

// Reads the front-end argument list `args` (the -Xcudafe values in order) into `out`.
void parse_cudafe(const std::vector<std::string>& args, IncludeOptions& out) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    // The value of `name` in args[i] (glued with '=' or the next argument), advancing i.
    const auto value_of = [&](std::string_view name) -> std::optional<std::string> {
      if (arg == name) {
        if (i + 1 >= args.size()) return std::nullopt;
        return args[++i];
      }
      if (names_option(arg, name)) return arg.substr(name.size() + 1);
      return std::nullopt;
    };
    bool known = false;
    for (const std::string_view name : kCudafeIncludePaths) {
      if (!names_option(arg, name)) continue;
      known = true;
      if (auto dir = value_of(name)) out.include_paths.push_back(std::move(*dir));
    }
    if (names_option(arg, kCudafePreInclude)) {
      known = true;
      if (auto file = value_of(kCudafePreInclude)) out.pre_includes.push_back(std::move(*file));
    } else if (arg.starts_with("-I") && arg.size() > 2 && arg[2] != '=') {
      known = true;
      out.include_paths.push_back(arg.substr(2));
    }
    for (const std::string_view name : kCudafeHarmless) known = known || names_option(arg, name);
    // Those with a value may take it as the next argument (`--diag_suppress 177`).
    for (const std::string_view name : kCudafeHarmlessWithValue) {
      if (arg == name && i + 1 < args.size()) ++i;
    }
    if (!known) out.unmodelled.push_back("-Xcudafe " + arg);
  }
}

// The value of `form` in options[i] (and options[i + 1] for the separate forms), advancing i
// past what it used; nullopt if options[i] is not `form`.
std::optional<std::string> option_value(const IncludeOptionForm& form,
                                        const std::vector<std::string>& options, std::size_t& i) {
  const std::string_view option = options[i];
  for (const std::string_view name : {form.short_name, form.long_name}) {
    if (option == name) {
      if (i + 1 >= options.size()) return std::nullopt;  // NVRTC rejects it: passed unchanged
      return options[++i];
    }
    if (option.starts_with(name) && option.size() > name.size() && option[name.size()] == '=') {
      return std::string(option.substr(name.size() + 1));
    }
  }
  if (form.glued && option.starts_with(form.short_name) && option.size() > form.short_name.size()) {
    return std::string(option.substr(form.short_name.size()));
  }
  return std::nullopt;
}

// Whether the toolkit's include folder holds CCCL's own folder: looked at once per folder and
// process, not on every key (the toolkit's layout goes with the NVRTC identity the key holds).
bool has_cccl_folder(const fs::path& toolkit_include_dir) {
  static std::mutex mutex;
  static std::map<std::string, bool, std::less<>> known;
  const std::lock_guard lock(mutex);
  auto [found, inserted] = known.try_emplace(toolkit_include_dir.string(), false);
  if (inserted) {
    std::error_code ec;
    found->second = fs::is_directory(toolkit_include_dir / "cccl", ec);
  }
  return found->second;
}

// The folder of the program name, as NVRTC takes it: from the working folder now.
// Whether the folder `dir` (as given: relative from the working folder) really lies under
// `folder`: its weakly_canonical path (a readlink per component: about 20 system calls for a
// site-packages folder). Memoized per process by (working folder, dir, folder). An answer "under"
// stands while `dir` is the same folder (device and inode: a folder's real place is its identity)
// or, missing, still missing: a stat a call. An answer "not under" stands without a look: a folder
// taken for a user folder is scanned, so if it has moved under `folder` since, its headers are
// keyed by their contents all the same (the key is wider than needed, never blind). `dir` spelled
// as `folder` itself is under it with no look at all: NVRTC searches the very folder the toolkit
// identity walked.
bool inside_folder(const std::string& dir, const fs::path& folder) {
  if (dir == folder.native()) return true;
  struct Known {
    dev_t dev = 0;
    ino_t ino = 0;
    bool exists = false;
    bool inside = false;
  };
  static std::mutex mutex;
  static auto* known = new std::map<std::string, Known, std::less<>>();  // never destroyed
  std::error_code ec;
  const std::string memo_key =
      (dir.empty() || dir.front() != '/' ? fs::current_path(ec).string() : std::string()) + '\0' +
      dir + '\0' + folder.string();
  std::optional<Known> was;
  {
    const std::lock_guard lock(mutex);
    if (auto found = known->find(memo_key); found != known->end()) was = found->second;
  }
  if (was && !was->inside) return false;
  struct stat st {};
  const bool exists = ::stat(dir.c_str(), &st) == 0;
  if (was && was->exists == exists &&
      (!exists || (was->dev == st.st_dev && was->ino == st.st_ino))) {
    return true;
  }
  const fs::path canonical = fs::weakly_canonical(dir, ec);
  const fs::path relative = canonical.lexically_relative(folder);
  const bool inside = !ec && !relative.empty() && *relative.begin() != "..";
  if (!ec) {
    const std::lock_guard lock(mutex);
    (*known)[memo_key] = Known{st.st_dev, st.st_ino, exists, inside};
  }
  return inside;
}

fs::path program_folder(const CompileRequest& request) {
  const fs::path name(request.program_name);
  if (name.is_absolute()) return name.lexically_normal().parent_path();  // no working folder
  std::error_code ec;
  return (fs::current_path(ec) / name).lexically_normal().parent_path();
}

}  // namespace

IncludeOptions parse_include_options(const std::vector<std::string>& options) {
  IncludeOptions out;
  std::vector<std::string> cudafe;  // the front end's own arguments, in order
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    if (option == "-Xcudafe" || option.starts_with("-Xcudafe=")) {
      out.nvrtc_options.push_back(option);
      if (option != "-Xcudafe") {
        cudafe.push_back(option.substr(std::string_view("-Xcudafe=").size()));
      } else if (i + 1 < options.size()) {
        cudafe.push_back(options[++i]);
        out.nvrtc_options.push_back(cudafe.back());
      }
    } else if (auto dir = option_value(kIncludePathForm, options, i)) {
      out.nvrtc_options.push_back(std::string(kIncludePathForm.long_name) + "=" + *dir);
      out.include_paths.push_back(std::move(*dir));
    } else if (auto file = option_value(kPreIncludeForm, options, i)) {
      out.nvrtc_options.push_back(std::string(kPreIncludeForm.long_name) + "=" + *file);
      out.pre_includes.push_back(std::move(*file));
    } else if (const std::size_t at = i; auto value = option_value(kDefineForm, options, i)) {
      out.nvrtc_options.insert(out.nvrtc_options.end(), options.begin() + static_cast<long>(at),
                               options.begin() + static_cast<long>(i) + 1);  // verbatim
      out.defines.push_back(std::move(*value));
    } else if (option == "-no-source-include" || option == "--no-source-include") {
      out.no_source_include = true;
      out.nvrtc_options.push_back(option);
    } else {
      out.nvrtc_options.push_back(option);
      // An option whose value may be the next one (`-D X`): that value is never an option.
      if (takes_next_as_value(option) && i + 1 < options.size()) {
        out.nvrtc_options.push_back(options[++i]);
      }
    }
  }
  parse_cudafe(cudafe, out);
  return out;
}

std::vector<std::filesystem::path> include_paths_from_options(
    const std::vector<std::string>& options) {
  const IncludeOptions parsed = parse_include_options(options);
  return {parsed.include_paths.begin(), parsed.include_paths.end()};
}

IncludePlan plan_includes(const CompileRequest& request, const fs::path& toolkit_include_dir) {
  IncludeOptions parsed = parse_include_options(request.options);
  IncludePlan plan;
  if (!request.source_dir.empty()) {
    plan.options.push_back("--include-path=" + request.source_dir.string());
    plan.search.include_paths.push_back(request.source_dir);
  }
  plan.options.insert(plan.options.end(), parsed.nvrtc_options.begin(), parsed.nvrtc_options.end());
  // The toolkit's own headers (CCCL's <cuda/std/...>, then the rest), after the user's folders.
  if (!toolkit_include_dir.empty()) {
    if (has_cccl_folder(toolkit_include_dir)) {
      plan.options.push_back("--include-path=" + (toolkit_include_dir / "cccl").string());
      plan.search.toolkit_dirs.push_back(toolkit_include_dir / "cccl");
    }
    plan.options.push_back("--include-path=" + toolkit_include_dir.string());
    plan.search.toolkit_dirs.push_back(toolkit_include_dir);
  }
  if (!parsed.no_source_include) plan.search.program_dir = program_folder(request);
  for (std::string& dir : parsed.include_paths) {
    // Toolkit headers are covered by KeyInputs::toolkit_headers: the key never scans its folder.
    if (!toolkit_include_dir.empty() && inside_folder(dir, toolkit_include_dir)) continue;
    plan.search.include_paths.emplace_back(std::move(dir));
  }
  plan.search.pre_includes = std::move(parsed.pre_includes);
  plan.search.defines = std::move(parsed.defines);
  plan.search.program_name = request.program_name;
  plan.unmodelled = std::move(parsed.unmodelled);
  return plan;
}

bool plan_still_current(const IncludePlan& plan, const CompileRequest& request) {
  return plan.search.program_dir.empty() || plan.search.program_dir == program_folder(request);
}

}  // namespace cubby
