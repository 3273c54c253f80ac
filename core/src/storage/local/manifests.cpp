#include "storage/local/manifests.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>

#include "storage/local/lock.hpp"
#include "util/bytes.hpp"
#include "util/file_trust.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

constexpr std::string_view kSuffix = ".manifest";
constexpr std::string_view kKeysSuffix = ".keys";
// The largest keys file read (kMaxManifestRecipes pairs of 32 bytes, and the header).
constexpr std::uint64_t kMaxKeysBytes = 4ull << 20;
// How long a writer waits for another process merging the same suite's manifest.
constexpr std::chrono::milliseconds kMergeLockWait = std::chrono::seconds(30);
// The largest manifest read (a suite of very large sources).
constexpr std::uint64_t kMaxManifestBytes = 1ull << 30;

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '+' || c == '-';
}

Result<std::optional<Manifest>> decode_file(const std::filesystem::path& path,
                                            struct stat* opened = nullptr) {
  auto bytes = io::read_file(path, kMaxManifestBytes, opened);
  if (!bytes) {
    if (bytes.error().code == Errc::not_found) return std::optional<Manifest>();
    return bytes.error();
  }
  auto manifest = decode_manifest(*bytes);
  if (!manifest) {
    return fail(Errc::corrupt, "manifest ", path.string(),
                " is not usable: ", manifest.error().message);
  }
  return std::optional<Manifest>(std::move(manifest).value());
}

// The lock under which processes of `suite` merge its files.
Result<std::optional<FileLock>> merge_lock(const std::filesystem::path& root,
                                           std::string_view suite) {
  return FileLock::acquire(suite_file(root, suite, ".lock"), kMergeLockWait);
}

}  // namespace

std::string manifest_stem(std::string_view suite) {
  const bool plain = !suite.empty() && suite.size() <= 64 && suite.front() != '.' &&
                     std::all_of(suite.begin(), suite.end(), safe_char);
  if (plain) return std::string(suite);
  std::string stem;
  for (char c : suite.substr(0, 40)) stem += safe_char(c) ? c : '_';
  if (!stem.empty() && stem.front() == '.') stem.front() = '_';
  const auto digest = hash128(suite);
  return stem + '-' + to_hex(digest.data(), 8);
}

std::filesystem::path manifests_dir(const std::filesystem::path& root) {
  return root / "manifests";
}

std::filesystem::path suite_file(const std::filesystem::path& root, std::string_view suite,
                                 std::string_view suffix) {
  return manifests_dir(root) / (manifest_stem(suite) + std::string(suffix));
}

std::filesystem::path manifest_path(const std::filesystem::path& root, std::string_view suite) {
  return suite_file(root, suite, kSuffix);
}

Result<std::optional<Manifest>> load_manifest(const std::filesystem::path& root,
                                              std::string_view suite, struct stat* opened) {
  const std::filesystem::path path = manifest_path(root, suite);
  auto manifest = decode_file(path, opened);
  if (manifest && *manifest && (*manifest)->suite != suite) {
    return fail(Errc::corrupt, "manifest ", path.string(), " belongs to suite '",
                (*manifest)->suite, "', not '", std::string(suite), "'");
  }
  return manifest;
}

Result<std::optional<std::string>> record_manifest(const std::filesystem::path& root,
                                                   std::string_view suite,
                                                   const std::vector<Recipe>& recent) {
  const std::filesystem::path path = manifest_path(root, suite);
  auto lock = merge_lock(root, suite);
  if (!lock) return lock.error();  // a wait that expired merges unlocked: the rename is atomic
  std::vector<Recipe> older;
  struct stat opened {};
  bool trusted = true;
  if (auto existing = load_manifest(root, suite, &opened); existing && *existing) {
    trusted = io::written_by_trusted(opened);
    if (trusted) older = std::move((*existing)->recipes);
  }
  Manifest merged{std::string(suite), merge_recipes(recent, older)};
  if (trusted && merged.recipes == older) return std::optional<std::string>();
  std::string bytes = encode_manifest(merged);
  if (auto written = io::write_file_atomic(path, bytes, io::FileMode::owner_writable); !written) {
    return written.error();
  }
  return std::optional<std::string>(std::move(bytes));
}

std::filesystem::path suite_keys_path(const std::filesystem::path& root, std::string_view suite) {
  return suite_file(root, suite, kKeysSuffix);
}

std::vector<RecipeKey> load_suite_keys(const std::filesystem::path& root, std::string_view suite) {
  if (auto bytes = io::read_file(suite_keys_path(root, suite), kMaxKeysBytes)) {
    if (auto existing = decode_suite_keys(*bytes); existing && existing->suite == suite) {
      return std::move(existing->keys);
    }
  }
  return {};
}

Result<std::optional<std::string>> record_suite_keys(const std::filesystem::path& root,
                                                     std::string_view suite,
                                                     const std::vector<RecipeKey>& recent) {
  const std::filesystem::path path = suite_keys_path(root, suite);
  auto lock = merge_lock(root, suite);
  if (!lock) return lock.error();  // as record_manifest
  const std::vector<RecipeKey> older = load_suite_keys(root, suite);
  // Unchanged unless a recipe is new or has a new key: another order alone (another process of
  // the suite, a filtered run) rewrites nothing and uploads nothing.
  std::map<std::array<std::uint8_t, 16>, Key> key_of;
  for (const RecipeKey& pair : older) key_of.emplace(pair.recipe, pair.key);
  const bool known = std::all_of(recent.begin(), recent.end(), [&](const RecipeKey& pair) {
    const auto found = key_of.find(pair.recipe);
    return found != key_of.end() && found->second == pair.key;
  });
  if (known) return std::optional<std::string>();
  SuiteKeys merged{std::string(suite), merge_suite_keys(recent, older)};
  std::string bytes = encode_suite_keys(merged);
  if (auto written = io::write_file_atomic(path, bytes); !written) return written.error();
  return std::optional<std::string>(std::move(bytes));
}

Result<void> save_manifest(const std::filesystem::path& root, const Manifest& manifest) {
  return io::write_file_atomic(manifest_path(root, manifest.suite), encode_manifest(manifest),
                               io::FileMode::owner_writable);
}

std::filesystem::path suite_miss_path(const std::filesystem::path& root, std::string_view suite) {
  return suite_file(root, suite, ".miss-" + std::to_string(::geteuid()));
}

void touch_suite_miss(const std::filesystem::path& root, std::string_view suite) {
  const std::filesystem::path path = suite_miss_path(root, suite);
  constexpr int kFlags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW;
  int fd = ::open(path.c_str(), kFlags, 0644);
  // The suite's first run: no manifests folder yet (made for every user of the store).
  if (fd < 0 && errno == ENOENT && io::make_folders(path.parent_path())) {
    fd = ::open(path.c_str(), kFlags, 0644);
  }
  if (fd < 0) return;
  static_cast<void>(::futimens(fd, nullptr));  // now, also for a file that existed
  ::close(fd);
}

std::vector<std::string> list_suites(const std::filesystem::path& root,
                                     std::vector<std::string>* problems) {
  std::vector<std::string> suites;
  std::vector<std::string> names;
  static_cast<void>(io::for_each_name(manifests_dir(root), [&](int, std::string_view name) {
    if (name.ends_with(kSuffix)) names.emplace_back(name);
  }));
  for (const std::string& name : names) {
    auto manifest = decode_file(manifests_dir(root) / name);
    if (!manifest) {
      if (problems != nullptr) problems->push_back(manifest.error().message);
    } else if (*manifest && manifest_stem((*manifest)->suite) + std::string(kSuffix) == name) {
      suites.push_back((*manifest)->suite);
    }
  }
  std::sort(suites.begin(), suites.end());
  return suites;
}

}  // namespace cubby
