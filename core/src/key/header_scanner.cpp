// The literal include graph of one scan; contract in header_scanner.hpp.
#include "key/header_scanner.hpp"

#include <algorithm>

namespace cubby {

ScanWatch::Looked Scanner::looked() const {
  ScanWatch::Looked out;
  out.folders.reserve(folders_.size());
  for (const auto& [path, f] : folders_)
    out.folders.push_back({path, f.is_dir, f.st, {f.asked.begin(), f.asked.end()}, f.every_name});
  for (const auto& [path, tried] : tried_) {
    if (tried) {
      out.files.push_back({path, tried->st});
    } else {
      out.absent.push_back(path);
    }
  }
  return out;
}

HeaderScan Scanner::take() && {
  std::sort(out_.begin(), out_.end(), [](const HeaderDigest& a, const HeaderDigest& b) {
    if (a.include != b.include) {
      return a.include < b.include;
    }
    if (a.path != b.path) {
      return a.path < b.path;
    }
    if (a.resolved != b.resolved) {
      return a.resolved < b.resolved;
    }
    return a.content_hash < b.content_hash;
  });
  out_.erase(std::unique(out_.begin(), out_.end()), out_.end());
  std::sort(unresolvable_.begin(), unresolvable_.end());
  unresolvable_.erase(std::unique(unresolvable_.begin(), unresolvable_.end()), unresolvable_.end());
  HeaderScan result;
  result.headers = std::move(out_);
  result.unresolvable = std::move(unresolvable_);
  return result;
}

bool Scanner::resolve(std::string_view include, const std::vector<std::string>& own_dirs) {
  std::string pair;
  for (const std::string& dir : own_dirs) {
    pair += dir;
    pair += '\n';
  }
  pair += '\0';
  pair += include;
  if (const auto known = resolved_.find(pair); known != resolved_.end()) return known->second;
  resolved_.emplace(pair, false);  // while it resolves (a header that includes itself)
  bool any = false;
  if (include.empty() || include.find('\0') != std::string_view::npos) {
    // No file can have this name (NVRTC cannot open it either).
  } else if (include.front() == '/') {
    any = try_candidate(include, std::string(include));
  } else {
    // Every candidate folder, own folders first, each tried once.
    std::vector<const std::string*> dirs;
    dirs.reserve(own_dirs.size() + search_dirs_.size());
    const auto add = [&](const std::string& dir) {
      for (const std::string* seen : dirs) {
        if (*seen == dir) {
          return;
        }
      }
      dirs.push_back(&dir);
    };
    for (const std::string& dir : own_dirs) {
      add(dir);
    }
    for (const std::string& dir : search_dirs_) {
      add(dir);
    }
    const std::string_view first = include.substr(0, include.find('/'));
    for (const std::string* dir : dirs) {
      if (!may_hold(*dir, first)) {
        continue;
      }
      std::string candidate;
      candidate.reserve(dir->size() + 1 + include.size());
      candidate += *dir;
      if (candidate.back() != '/') {
        candidate += '/';
      }
      candidate += include;
      any = try_candidate(include, candidate) || any;
    }
  }
  if (!any) {
    HeaderDigest digest;
    digest.include = std::string(include);
    out_.push_back(std::move(digest));
    if (!toolkit_dirs_.empty() && !include.empty() && include.front() != '/') {
      toolkit_roots_.insert(std::string(include));
    }
  }
  resolved_[pair] = any;  // by name: the scan may have rehashed the map
  return any;
}

bool Scanner::in_toolkit(std::string_view include) const {
  if (include.empty() || include.front() == '/') return false;  // resolve() looked it up
  struct stat st {};
  for (const std::string& dir : toolkit_dirs_) {
    const std::string path = dir + "/" + std::string(include);
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return true;
  }
  return false;
}

Scanner::Folder& Scanner::folder(const std::string& path, bool list) {
  auto [at, inserted] = folders_.try_emplace(path);
  Folder& f = at->second;
  if (inserted) f.is_dir = ::stat(path.c_str(), &f.st) == 0 && S_ISDIR(f.st.st_mode);
  if (list && f.is_dir && !f.listed) {
    f.listed = true;
    f.names = listing_of(path, f.st);
  }
  return f;
}

const std::string& Scanner::canonical_folder(const std::string& path) {
  Folder& f = folder(path, false);
  if (!f.canonical) f.canonical = real_path(path);
  return *f.canonical;
}

bool Scanner::may_hold(const std::string& dir, std::string_view first) {
  Folder& f = folder(dir);
  if (!f.is_dir) return false;
  if (!f.names || first.empty() || first == "." || first == "..") return true;
  const bool answer = f.names->may_contain(first);
  if (f.asked.find(first) == f.asked.end()) f.asked.emplace(first, answer);
  return answer;
}

bool Scanner::try_candidate(std::string_view include, const std::string& candidate) {
  auto [at, inserted] = tried_.try_emplace(candidate);
  if (inserted) {
    struct stat st {};
    Resolved found;
    const std::string dir = parent_of(candidate);
    if (is_folder(dir) && ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        resolve_file(
            candidate, st, [&]() -> const std::string& { return canonical_folder(dir); },
            place_.record(), found)) {
      at->second = Tried{std::move(found), static_cast<std::uint64_t>(st.st_dev),
                         static_cast<std::uint64_t>(st.st_ino), st};
    }
  }
  if (!at->second) {
    return false;
  }
  const Tried tried = *at->second;  // a copy: the recursion below adds to tried_
  Resolved file = tried.file;

  HeaderDigest digest;
  digest.include = std::string(include);
  digest.resolved = true;
  digest.content_hash = file.scan->content_hash;
  // Each file's includes are resolved once per call (this also breaks include cycles), from the
  // folder it was reached through and the folder it really lives in. A file reached again
  // through another symlinked folder is not rescanned from that folder.
  const bool first_visit =
      file.scan->lists_anything() && visited_.insert({tried.dev, tried.ino}).second;
  std::vector<std::string> own_dirs;
  if (first_visit) {
    own_dirs.push_back(parent_of(candidate));
    std::string real_parent = parent_of(file.canonical);
    if (real_parent != own_dirs.front()) {
      own_dirs.push_back(std::move(real_parent));
    }
  }
  if (first_visit) {
    add_unresolvable(file.canonical + ":", file.scan->unresolvable);
    sources_.push_back({file.canonical + ":", &file.scan->test_macros, &file.scan->forwards,
                        &file.scan->calls, &file.scan->defines, &file.scan->computed, own_dirs});
    scans_.push_back(file.scan);  // keeps the lists sources_ points to
  }
  digest.path = std::move(file.canonical);
  out_.push_back(std::move(digest));
  if (first_visit) {
    scan(file.scan->includes, own_dirs);
  }
  return true;
}

}  // namespace cubby
