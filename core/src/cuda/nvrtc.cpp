// NVRTC loaded lazily with dlopen (libcubby never links it): locating the library for keys and
// compiling with name expressions.
#include "cubby/nvrtc.hpp"

#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string_view>
#include <system_error>

#include "util/bytes.hpp"
#include "cuda/nvrtc_locate.hpp"
#include "key/include_plan.hpp"

#ifndef CUBBY_NVRTC_MAJOR
#error "CUBBY_NVRTC_MAJOR must be defined by the build (the CUDA toolkit's major version)"
#endif
#ifndef CUBBY_BUILD_NVRTC_DIR
#define CUBBY_BUILD_NVRTC_DIR ""
#endif

namespace fs = std::filesystem;

namespace cubby {
namespace {

constexpr int kNvrtcMajor = CUBBY_NVRTC_MAJOR;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ---- ELF build-id (reads only the ELF header, the program headers and the PT_NOTE segments) ----

bool read_at(std::ifstream& in, std::uint64_t offset, char* out, std::size_t size) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in) return false;
  in.read(out, static_cast<std::streamsize>(size));
  return static_cast<std::size_t>(in.gcount()) == size;
}

// The build-id in a block of ELF notes; empty if none.
std::string build_id_in_notes(const std::string& notes) {
  constexpr std::uint32_t kNtGnuBuildId = 3;
  std::size_t at = 0;
  while (notes.size() - at >= 12) {
    const auto name_size = load_le<std::uint32_t>(notes.data() + at);
    const auto desc_size = load_le<std::uint32_t>(notes.data() + at + 4);
    const auto type = load_le<std::uint32_t>(notes.data() + at + 8);
    const std::uint64_t name_padded = (std::uint64_t{name_size} + 3) & ~std::uint64_t{3};
    const std::uint64_t desc_padded = (std::uint64_t{desc_size} + 3) & ~std::uint64_t{3};
    const std::uint64_t rest = notes.size() - at - 12;
    if (name_padded > rest || desc_padded > rest - name_padded) return {};
    const char* name = notes.data() + at + 12;
    const char* desc = name + name_padded;
    if (type == kNtGnuBuildId && name_size == 4 && std::memcmp(name, "GNU", 4) == 0 &&
        desc_size > 0) {
      return to_hex(std::string_view(desc, desc_size));
    }
    at += 12 + static_cast<std::size_t>(name_padded + desc_padded);
  }
  return {};
}

// ---- locating ----

struct Candidate {
  fs::path file;    // as found (may be a symlink)
  fs::path folder;  // the folder it was found in
  int major = -1;   // from its file name, -1 if unknown
};

// The major version in a file name "libnvrtc.so.<major>[.<more>]", -1 if none.
int major_from_name(const std::string& name) {
  static constexpr std::string_view kPrefix = "libnvrtc.so.";
  if (name.rfind(kPrefix, 0) != 0) return -1;
  std::string_view rest = std::string_view(name).substr(kPrefix.size());
  rest = rest.substr(0, rest.find('.'));
  if (!all_digits(rest) || rest.size() > 4) return -1;
  return std::stoi(std::string(rest));
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);  // follows symlinks
}

// nvrtcVersion() of the library at `path`, loading it (the fallback when no builtins file says).
Result<std::string> version_by_loading(const fs::path& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return fail(
        Errc::nvrtc_unavailable, "cannot load ", path.string(),
        " to ask its version: ", why == nullptr ? "unknown error" : why,
        ". Set CUBBY_NVRTC_LIBRARY to a working libnvrtc.so or CUDA_HOME to a CUDA toolkit.");
  }
  // The handle stays open: compile_nvrtc loads this same file later.
  using VersionFn = nvrtcResult (*)(int*, int*);
  auto version_fn = reinterpret_cast<VersionFn>(dlsym(handle, "nvrtcVersion"));
  int major = 0;
  int minor = 0;
  if (version_fn == nullptr || version_fn(&major, &minor) != NVRTC_SUCCESS) {
    return fail(
        Errc::nvrtc_unavailable, path.string(),
        " does not answer nvrtcVersion; it is not a usable libnvrtc. Set CUBBY_NVRTC_LIBRARY "
        "to a working libnvrtc.so or CUDA_HOME to a CUDA toolkit.");
  }
  return std::to_string(major) + "." + std::to_string(minor);
}

Result<NvrtcLibrary> describe(const Candidate& candidate) {
  std::error_code ec;
  fs::path canonical = fs::canonical(candidate.file, ec);
  if (ec) {
    return fail(Errc::nvrtc_unavailable, "cannot resolve ", candidate.file.string(), ": ",
                ec.message(), ". Set CUBBY_NVRTC_LIBRARY to a readable libnvrtc.so.");
  }
  struct stat info {};
  if (::stat(canonical.c_str(), &info) != 0) {
    return fail(Errc::nvrtc_unavailable, "cannot stat ", canonical.string(), ": ",
                std::strerror(errno), ". Set CUBBY_NVRTC_LIBRARY to a readable libnvrtc.so.");
  }
  int major =
      candidate.major >= 0 ? candidate.major : major_from_name(canonical.filename().string());
  std::string version = detail::builtins_version_in(candidate.folder, major);
  if (version.empty() && canonical.parent_path() != candidate.folder) {
    version = detail::builtins_version_in(canonical.parent_path(), major);
  }
  if (version.empty()) {
    auto loaded = version_by_loading(canonical);
    if (!loaded.ok()) return std::move(loaded).error();
    version = std::move(loaded.value());
  }
  std::string stamp = detail::elf_build_id(canonical);
  if (stamp.empty()) {
    const auto ns = static_cast<long long>(info.st_mtim.tv_sec) * 1000000000LL +
                    static_cast<long long>(info.st_mtim.tv_nsec);
    stamp = "mtime:" + std::to_string(ns);
  }
  NvrtcLibrary library;
  library.path = canonical;
  library.version = version;
  // With a build-id the identity is location-free, so machines whose identical toolkits live in
  // different folders share entries; without one, the path and mtime stand in for it.
  library.identity = version + ";" + std::to_string(static_cast<long long>(info.st_size)) + ";" +
                     (stamp.starts_with("mtime:") ? canonical.string() + ";" + stamp : stamp);
  for (const fs::path& lib : {candidate.folder, canonical.parent_path()}) {
    const fs::path include = fs::weakly_canonical(lib / ".." / "include", ec);
    if (!ec && fs::exists(include / "nvrtc.h", ec)) {
      library.include_dir = include;
      break;
    }
  }
  return library;
}

// ---- loading ----

template <class Fn>
bool resolve(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  return out != nullptr;
}

struct NvrtcApi {
  std::string version;  // "major.minor" from nvrtcVersion
  decltype(&::nvrtcVersion) version_fn = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create_program = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&::nvrtcAddNameExpression) add_name_expression = nullptr;
  decltype(&::nvrtcCompileProgram) compile_program = nullptr;
  decltype(&::nvrtcGetLoweredName) get_lowered_name = nullptr;
  decltype(&::nvrtcGetProgramLogSize) get_log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) get_log = nullptr;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) get_ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) get_ptx = nullptr;
  decltype(&::nvrtcGetLTOIRSize) get_ltoir_size = nullptr;
  decltype(&::nvrtcGetLTOIR) get_ltoir = nullptr;

  std::string describe(nvrtcResult rc) const {
    const char* text = error_string(rc);
    return text == nullptr ? "NVRTC error " + std::to_string(static_cast<int>(rc))
                           : std::string(text);
  }
};

Result<NvrtcApi> load_nvrtc() {
  auto library = locate_nvrtc();
  if (!library.ok()) return library.error();
  const fs::path& path = library->path;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return fail(
        Errc::nvrtc_unavailable, "cannot load ", path.string(), ": ",
        why == nullptr ? "unknown error" : why,
        ". Set CUBBY_NVRTC_LIBRARY to a working libnvrtc.so or CUDA_HOME to a CUDA toolkit.");
  }
  // The handle is never closed: NVRTC stays loaded for the life of the process.
  NvrtcApi api;
  const char* missing = nullptr;
  auto need = [&](const char* name, auto& fn) {
    if (missing == nullptr && !resolve(handle, name, fn)) missing = name;
  };
  need("nvrtcVersion", api.version_fn);
  need("nvrtcGetErrorString", api.error_string);
  need("nvrtcCreateProgram", api.create_program);
  need("nvrtcDestroyProgram", api.destroy_program);
  need("nvrtcAddNameExpression", api.add_name_expression);
  need("nvrtcCompileProgram", api.compile_program);
  need("nvrtcGetLoweredName", api.get_lowered_name);
  need("nvrtcGetProgramLogSize", api.get_log_size);
  need("nvrtcGetProgramLog", api.get_log);
  need("nvrtcGetCUBINSize", api.get_cubin_size);
  need("nvrtcGetCUBIN", api.get_cubin);
  need("nvrtcGetPTXSize", api.get_ptx_size);
  need("nvrtcGetPTX", api.get_ptx);
  need("nvrtcGetLTOIRSize", api.get_ltoir_size);
  need("nvrtcGetLTOIR", api.get_ltoir);
  if (missing != nullptr) {
    return fail(Errc::nvrtc_unavailable, path.string(), " has no ", missing,
                "; it is too old or not libnvrtc. Set CUBBY_NVRTC_LIBRARY to libnvrtc.so of CUDA ",
                std::to_string(kNvrtcMajor), " or newer.");
  }
  int major = 0;
  int minor = 0;
  if (api.version_fn(&major, &minor) != NVRTC_SUCCESS) {
    return fail(Errc::nvrtc_unavailable, path.string(),
                " failed nvrtcVersion; set CUBBY_NVRTC_LIBRARY ", "to a working libnvrtc.so.");
  }
  api.version = std::to_string(major) + "." + std::to_string(minor);
  return api;
}

// The loaded NVRTC, loaded on first use (once per process; a failure is remembered too).
const Result<NvrtcApi>& nvrtc_api() {
  static const Result<NvrtcApi> api = load_nvrtc();
  return api;
}

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

}  // namespace

// ---- detail (nvrtc_locate.hpp) ----

namespace detail {

std::vector<fs::path> nvrtc_search_folders() {
  std::vector<fs::path> folders;
  auto add = [&folders](const fs::path& folder) {
    if (folder.empty()) return;
    const fs::path normal = folder.lexically_normal();
    if (std::find(folders.begin(), folders.end(), normal) == folders.end())
      folders.push_back(normal);
  };
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    const std::string root = env_or_empty(var);
    if (!root.empty()) add(fs::path(root) / "lib64");
  }
  add(fs::path(CUBBY_BUILD_NVRTC_DIR));
  add("/usr/local/cuda/lib64");
  const std::string ld_path = env_or_empty("LD_LIBRARY_PATH");
  std::size_t start = 0;
  while (start <= ld_path.size()) {
    std::size_t end = ld_path.find(':', start);
    if (end == std::string::npos) end = ld_path.size();
    add(fs::path(ld_path.substr(start, end - start)));
    start = end + 1;
  }
  add("/usr/lib/x86_64-linux-gnu");
  add("/usr/lib64");
  add("/usr/lib");
  return folders;
}

Result<NvrtcLibrary> locate_nvrtc_uncached() {
  const std::string explicit_library = env_or_empty("CUBBY_NVRTC_LIBRARY");
  if (!explicit_library.empty()) {
    const fs::path file(explicit_library);
    if (!is_file(file)) {
      return fail(
          Errc::nvrtc_unavailable, "CUBBY_NVRTC_LIBRARY is ", explicit_library,
          ", which is not a file. Point it at libnvrtc.so (e.g. /usr/local/cuda/lib64/libnvrtc.so.",
          std::to_string(kNvrtcMajor), ") or unset it to search the usual folders.");
    }
    return describe(Candidate{file, file.parent_path(), major_from_name(file.filename().string())});
  }
  const std::vector<fs::path> folders = nvrtc_search_folders();
  const std::string versioned = "libnvrtc.so." + std::to_string(kNvrtcMajor);
  for (const fs::path& folder : folders) {
    if (is_file(folder / versioned))
      return describe(Candidate{folder / versioned, folder, kNvrtcMajor});
    if (is_file(folder / "libnvrtc.so"))
      return describe(Candidate{folder / "libnvrtc.so", folder, -1});
  }
  std::string searched;
  for (const fs::path& folder : folders) searched += "\n  " + folder.string();
  return fail(
      Errc::nvrtc_unavailable, "cannot find ", versioned, " or libnvrtc.so; searched:", searched,
      "\nSet CUBBY_NVRTC_LIBRARY to the library file or CUDA_HOME to the CUDA toolkit folder.");
}

std::string elf_build_id(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::array<char, 64> header{};
  if (!read_at(in, 0, header.data(), header.size())) return {};
  if (std::memcmp(header.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      header[4] != 2 /* ELFCLASS64 */ || header[5] != 1 /* ELFDATA2LSB */) {
    return {};
  }
  const auto phoff = load_le<std::uint64_t>(header.data() + 32);
  const auto phentsize = load_le<std::uint16_t>(header.data() + 54);
  const auto phnum = load_le<std::uint16_t>(header.data() + 56);
  constexpr std::uint32_t kPtNote = 4;
  constexpr std::uint64_t kMaxNoteBytes = 1 << 20;
  if (phentsize < 56 || phnum == 0) return {};
  std::string table(std::size_t{phentsize} * phnum, '\0');
  if (!read_at(in, phoff, table.data(), table.size())) return {};
  for (std::size_t i = 0; i < phnum; ++i) {
    const char* entry = table.data() + i * phentsize;
    if (load_le<std::uint32_t>(entry) != kPtNote) continue;
    const auto offset = load_le<std::uint64_t>(entry + 8);
    const auto size = load_le<std::uint64_t>(entry + 32);
    if (size == 0 || size > kMaxNoteBytes) continue;
    std::string notes(static_cast<std::size_t>(size), '\0');
    if (!read_at(in, offset, notes.data(), notes.size())) continue;
    std::string id = build_id_in_notes(notes);
    if (!id.empty()) return id;
  }
  return {};
}

std::string builtins_version_in(const fs::path& folder, int major) {
  static constexpr std::string_view kPrefix = "libnvrtc-builtins.so.";
  std::set<std::string> versions;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const std::string_view rest = std::string_view(name).substr(kPrefix.size());
    const std::size_t dot = rest.find('.');
    if (dot == std::string_view::npos) continue;
    const std::string_view major_text = rest.substr(0, dot);
    const std::string_view minor_text = rest.substr(dot + 1);
    if (!all_digits(major_text) || !all_digits(minor_text) || major_text.size() > 4 ||
        minor_text.size() > 4) {
      continue;
    }
    if (major >= 0 && std::stoi(std::string(major_text)) != major) continue;
    versions.insert(std::string(rest));
  }
  return versions.size() == 1 ? *versions.begin() : std::string();
}

}  // namespace detail

// ---- public ----

Result<NvrtcLibrary> locate_nvrtc() {
  static const Result<NvrtcLibrary> library = detail::locate_nvrtc_uncached();
  return library;
}

PayloadKind payload_kind_for(const std::string& arch, const std::vector<std::string>& options) {
  for (const std::string& option : options) {
    if (option == "-dlto" || option == "--dlto") return PayloadKind::ltoir;
  }
  if (arch.rfind("compute_", 0) == 0) return PayloadKind::ptx;
  return PayloadKind::cubin;
}

Result<std::string> loaded_nvrtc_version() {
  const auto& api = nvrtc_api();
  if (!api.ok()) return api.error();
  return api->version;
}

Result<Entry> compile_nvrtc(const CompileRequest& request) {
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
  {
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
  }

  const auto& loaded = nvrtc_api();
  if (!loaded.ok()) return loaded.error();
  const NvrtcApi& api = loaded.value();

  const PayloadKind kind = payload_kind_for(request.arch, request.options);
  const std::string arch_option = "--gpu-architecture=" + request.arch;
  const auto library = locate_nvrtc();
  std::vector<std::string> nvrtc_options =
      plan_includes(request, library.ok() ? library->include_dir : fs::path()).options;
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

  for (const std::string& expression : expressions) {
    rc = api.add_name_expression(program, expression.c_str());
    if (rc != NVRTC_SUCCESS) {
      return fail(Errc::invalid_argument, "NVRTC rejected the name expression \"", expression,
                  "\" of ", request.program_name, ": ", api.describe(rc),
                  ". Name a __global__ function or __device__ variable, e.g. ns::k<float>.");
    }
  }

  rc = api.compile_program(program, static_cast<int>(option_pointers.size()),
                           option_pointers.data());
  std::string log = program_log(api, program);
  if (rc == NVRTC_ERROR_INVALID_OPTION) {
    return fail(Errc::invalid_argument, "NVRTC rejected an option of ", request.program_name, " (",
                api.describe(rc), "); check the options and the architecture \"", request.arch,
                "\":\n", log);
  }
  if (rc != NVRTC_SUCCESS) {
    // NVRTC reports a bad name expression as a compile error at "#pragma nv_mangled_name <expr>".
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

  Entry entry;
  for (const std::string& expression : expressions) {
    const char* lowered = nullptr;
    rc = api.get_lowered_name(program, expression.c_str(), &lowered);
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
  rc = size_fn(program, &size);
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
  // PTX is text: NVRTC's terminating NUL is not part of the payload (std::string adds its own).
  if (kind == PayloadKind::ptx) {
    while (!entry.payload.empty() && entry.payload.back() == '\0') entry.payload.pop_back();
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

}  // namespace cubby
