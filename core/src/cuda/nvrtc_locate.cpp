// Locating libnvrtc without loading it: the search folders, the version (from the builtins file
// name, else by asking the library) and the identity (ELF build-id) that enter every key.
#include "cuda/nvrtc_locate.hpp"

#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string_view>
#include <system_error>

#include "cubby/nvrtc.hpp"
#include "util/bytes.hpp"

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

Result<NvrtcLibrary> locate_nvrtc() {
  static const Result<NvrtcLibrary> library = detail::locate_nvrtc_uncached();
  return library;
}

}  // namespace cubby
