// Folder tree fingerprints; contract in folder_fingerprint.hpp.
#include "key/folder_fingerprint.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "key/file_system_trust.hpp"
#include "key/folder_walk.hpp"
#include "key/scan_record.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

struct KnownFile {
  struct stat st {};
  std::array<std::uint8_t, 16> hash{};
};

struct FileHashes {
  std::mutex mutex;
  std::unordered_map<std::string, KnownFile> known;
};
FileHashes& file_hashes() {
  static auto* instance = new FileHashes();  // never destroyed: usable at exit
  return *instance;
}

class TreeWalk {
 public:
  TreeWalk(const std::string& top, const FolderTreeLimits& limits) : top_(top), limits_(limits) {}

  // Lists the tree under the top; false once a bound is reached or something cannot be read
  // (why_ says which).
  bool walk() {
    std::string unlisted;
    const bool ok = walk_regular_files(
        top_,
        [&](const std::string& folder, const std::string& path, const struct stat& st) {
          if (++files_ > limits_.max_files) {
            return fail("more than " + std::to_string(limits_.max_files) + " files");
          }
          bytes_ += static_cast<std::uint64_t>(st.st_size);
          if (bytes_ > limits_.max_bytes) {
            return fail("more than " + std::to_string(limits_.max_bytes >> 20) + " MiB of files");
          }
          const std::string file = folder + "/" + path.substr(path.rfind('/') + 1);
          std::array<std::uint8_t, 16> hash{};
          if (!hash_of(file, st, hash)) return fail("a file that cannot be read: " + file);
          entries_.emplace_back(path, hash);
          return true;
        },
        &unlisted);
    if (!unlisted.empty()) return fail("a folder that cannot be listed: " + unlisted);
    return ok;
  }

  FolderTreeFingerprint result() {
    FolderTreeFingerprint out;
    out.files = files_;
    if (!why_.empty()) {
      out.why = why_;
      return out;
    }
    std::sort(entries_.begin(), entries_.end());
    std::string listing;
    for (const auto& [path, hash] : entries_) {
      listing += path;
      listing += '\0';
      listing.append(reinterpret_cast<const char*>(hash.data()), hash.size());
    }
    out.ok = true;
    out.hash = hash128(listing);
    return out;
  }

 private:
  bool fail(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return false;
  }

  // The content hash of the file at `path` whose stat is `st`, memoized (see the header).
  static bool hash_of(const std::string& path, const struct stat& st,
                      std::array<std::uint8_t, 16>& out) {
    FileHashes& hashes = file_hashes();
    {
      const std::lock_guard lock(hashes.mutex);
      if (auto found = hashes.known.find(path);
          found != hashes.known.end() && FileScan::same_state(found->second.st, st)) {
        out = found->second.hash;
        return true;
      }
    }
    const std::int64_t read_ns = realtime_ns();
    auto text = io::read_file(path);
    if (!text) return false;
    out = hash128(*text);
    struct stat after {};
    if (::stat(path.c_str(), &after) == 0 && FileScan::same_state(st, after) &&
        FileScan::changed_before(st, read_ns - ScanRecord::kTooNewNs) &&
        device_trusted(path, st.st_dev)) {
      const std::lock_guard lock(hashes.mutex);
      hashes.known[path] = KnownFile{st, out};
    }
    return true;
  }

  std::string top_;
  const FolderTreeLimits& limits_;
  std::size_t files_ = 0;
  std::uint64_t bytes_ = 0;
  std::string why_;
  std::vector<std::pair<std::string, std::array<std::uint8_t, 16>>> entries_;
};

}  // namespace

FolderTreeFingerprint fingerprint_folder_tree(const std::string& folder,
                                              const FolderTreeLimits& limits) {
  char real[PATH_MAX];  // the top may be a link (a folder below it is never entered through one)
  const std::string top = ::realpath(folder.c_str(), real) != nullptr ? std::string(real) : folder;
  TreeWalk walk(top, limits);
  struct stat st {};
  if (::stat(top.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) walk.walk();
  return walk.result();
}

void forget_folder_fingerprints() {
  FileHashes& hashes = file_hashes();
  const std::lock_guard lock(hashes.mutex);
  hashes.known.clear();
}

}  // namespace cubby
