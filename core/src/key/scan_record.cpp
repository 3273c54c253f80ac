// The header scan's record between processes: its byte format and the merge-on-save table.
#include "key/scan_record.hpp"

#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "key/file_system_trust.hpp"
#include "key/include_lexer.hpp"
#include "key/record_bytes.hpp"
#include "key/scan_watch.hpp"
#include "util/bytes.hpp"
#include "util/file_trust.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

constexpr std::string_view kMagic = "cubby scan record\n";

}  // namespace

std::int64_t realtime_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

std::string encode_scan_record(const ScanEntries& entries) {
  std::string out = start_record(kMagic, kScanRecordVersion, kIncludeLexerVersion);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(entries.size()));
  for (const auto& [path, scan] : entries) {
    put_str(out, path);
    put_le<std::uint64_t>(out, scan->dev);
    put_le<std::uint64_t>(out, scan->ino);
    put_le<std::uint64_t>(out, scan->size);
    put_le<std::int64_t>(out, scan->mtime_ns);
    put_le<std::int64_t>(out, scan->ctime_ns);
    out.append(reinterpret_cast<const char*>(scan->content_hash.data()), scan->content_hash.size());
    put_list(out, scan->includes);
    put_list(out, scan->unresolvable);
    put_list(out, scan->test_macros);
    put_list(out, scan->forwards);
    put_list(out, scan->calls);
    put_list(out, scan->defines);
    put_list(out, scan->computed);
  }
  seal_record(out);
  return out;
}

std::optional<ScanEntries> decode_scan_record(std::string_view bytes) {
  std::optional<RecordReader> opened =
      open_record(bytes, kMagic, kScanRecordVersion, kIncludeLexerVersion);
  if (!opened) return std::nullopt;
  RecordReader& in = *opened;
  const auto count = in.integer<std::uint32_t>();
  ScanEntries entries;
  for (std::uint32_t i = 0; i < count && in.ok(); ++i) {
    std::string path = in.str();
    auto scan = std::make_shared<FileScan>();
    scan->dev = in.integer<std::uint64_t>();
    scan->ino = in.integer<std::uint64_t>();
    scan->size = in.integer<std::uint64_t>();
    scan->mtime_ns = in.integer<std::int64_t>();
    scan->ctime_ns = in.integer<std::int64_t>();
    const std::string_view hash = in.raw(scan->content_hash.size());
    if (!in.ok()) break;
    std::memcpy(scan->content_hash.data(), hash.data(), hash.size());
    scan->includes = in.list();
    scan->unresolvable = in.list();
    scan->test_macros = in.list();
    scan->forwards = in.list();
    scan->calls = in.list();
    scan->defines = in.list();
    scan->computed = in.list();
    entries.emplace_back(std::move(path), std::move(scan));
  }
  if (!in.ok() || !in.at_end()) return std::nullopt;
  return entries;
}

std::filesystem::path scan_record_file(const std::filesystem::path& folder) {
  return folder / ("scan-record-" + std::to_string(::geteuid()));
}

std::optional<std::int64_t> file_system_type(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return std::nullopt;
  return static_cast<std::int64_t>(fs.f_type);
}

ScanRecord::ScanRecord(std::filesystem::path file, std::int64_t too_new_ns, std::size_t max_entries,
                       FileSystemTypeOf fs_type_of)
    : file_(std::move(file)),
      too_new_ns_(too_new_ns),
      max_entries_(max_entries),
      fs_type_of_(fs_type_of) {}

bool ScanRecord::local_locked(const std::string& path, std::uint64_t dev) {
  if (const auto known = local_devices_.find(dev); known != local_devices_.end()) {
    return known->second;
  }
  const auto type = fs_type_of_(path);
  const bool local = type && stat_trusted(path, *type);
  if (type) local_devices_.emplace(dev, local);  // unknown: asked again next time
  return local;
}

void ScanRecord::load_locked() {
  if (loaded_) return;
  loaded_ = true;
  auto bytes = io::read_own_file(file_, kMaxBytes);
  if (!bytes) return;
  auto decoded = decode_scan_record(*bytes);
  if (!decoded) return;
  for (auto& [path, scan] : *decoded) entries_.try_emplace(std::move(path), std::move(scan));
}

std::shared_ptr<const FileScan> ScanRecord::find(const std::string& canonical,
                                                 const struct stat& st) {
  const std::lock_guard lock(mutex_);
  load_locked();
  const auto found = entries_.find(canonical);
  if (found == entries_.end() || !found->second->matches(st) ||
      !local_locked(canonical, static_cast<std::uint64_t>(st.st_dev))) {
    return nullptr;
  }
  mine_.insert(canonical);
  return found->second;
}

void ScanRecord::add(const std::string& canonical, std::shared_ptr<const FileScan> scan) {
  // Too new: a stamp within too_new_ns_ of the read (or after it) may not change on a rewrite.
  if (scan->read_ns == 0 ||
      std::max(scan->mtime_ns, scan->ctime_ns) > scan->read_ns - too_new_ns_) {
    return;
  }
  const std::lock_guard lock(mutex_);
  if (!local_locked(canonical, scan->dev)) return;  // another host's edit may not show in a stat
  load_locked();
  entries_[canonical] = std::move(scan);
  mine_.insert(canonical);
  dirty_ = true;
}

void ScanRecord::save() {
  const std::lock_guard saving(save_mutex_);
  ScanEntries merged;
  std::unordered_set<std::string> taken;
  // The bytes are bounded as well as the entries (a header may list thousands of names).
  std::uint64_t bytes_kept = 0;
  const auto fits = [&](const std::string& path, const FileScan& scan) {
    std::uint64_t size = path.size() + 100;
    for (const auto* list : {&scan.includes, &scan.unresolvable, &scan.test_macros, &scan.forwards,
                             &scan.calls, &scan.defines, &scan.computed}) {
      for (const std::string& item : *list) size += item.size() + 4;
    }
    bytes_kept += size;
    return merged.size() < max_entries_ && bytes_kept <= kMaxBytes / 2;
  };
  {
    const std::lock_guard lock(mutex_);
    if (!dirty_) return;
    dirty_ = false;
    for (const std::string& path : mine_) {
      if (auto found = entries_.find(path); found != entries_.end()) {
        if (!fits(path, *found->second)) break;
        merged.emplace_back(path, found->second);
        taken.insert(path);
      }
    }
  }
  // Another process's entries, as on disk now (those this process read but did not use are not
  // kept unless they are still there: a record only grows by what some process uses).
  if (auto bytes = io::read_own_file(file_, kMaxBytes)) {
    if (auto decoded = decode_scan_record(*bytes)) {
      for (auto& [path, scan] : *decoded) {
        if (taken.contains(path)) continue;
        if (!fits(path, *scan)) break;
        merged.emplace_back(std::move(path), std::move(scan));
      }
    }
  }
  // A cache: failure costs time. Writable by this user only (another's file is never read).
  (void)io::write_file_atomic(file_, encode_scan_record(merged), io::FileMode::owner_writable);
}

}  // namespace cubby
