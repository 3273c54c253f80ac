// The toolkit headers' closure of names; contract in toolkit_names.hpp.
#include "key/toolkit_names.hpp"

#include <sys/stat.h>

#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "key/file_scans.hpp"
#include "key/include_scan.hpp"
#include "key/toolkit_headers.hpp"
#include "util/bytes.hpp"
#include "util/hash.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

// The file in `base` that keeps the closure of `memo_key` between processes (empty: none): named by
// a hash of the key and the identity of the toolkit's include folder (the last toolkit folder: the
// others lie inside it), so an added, removed or resized toolkit header gives another file.
std::filesystem::path persisted_closure(const std::string& memo_key,
                                        const std::vector<std::string>& toolkit_dirs,
                                        const std::filesystem::path& base) {
  if (base.empty() || toolkit_dirs.empty()) return {};
  const auto digest = hash128(memo_key + '\1' + toolkit_headers_identity(toolkit_dirs.back()));
  return toolkit_names_file(base, to_hex(digest.data(), digest.size()));
}

ToolkitNames group_names(const std::set<std::string>& names) {
  ToolkitNames grouped;
  for (const std::string& name : names) {
    if (!name.empty() && name.front() != '/')
      grouped[name.substr(0, name.find('/'))].push_back(name);
  }
  return grouped;
}

// A closure as memoized: content-keyed, for every folder. `text`: its names file's text (one name
// a line, then a line "end"; empty: no toolkit file was reached, no file is kept). `kept_in`: the
// folders whose names file this process has read or written (guarded by the table's mutex).
struct Closure {
  std::shared_ptr<const ToolkitNames> names;
  std::string text;
  std::set<std::filesystem::path> kept_in;
};

MemoTable<Closure>& closures() { return memo_table<Closure>(); }

// The closure of `memo_key` now in the memo (the first published wins), `folder` noted as kept.
std::shared_ptr<const ToolkitNames> publish(const std::string& memo_key, Closure closure,
                                            const std::filesystem::path& folder) {
  auto& [mutex, known] = closures();
  const std::lock_guard lock(mutex);
  Closure& known_closure = known.try_emplace(memo_key, std::move(closure)).first->second;
  if (!folder.empty()) known_closure.kept_in.insert(folder);
  return known_closure.names;
}

}  // namespace

std::shared_ptr<const ToolkitNames> toolkit_closure(const std::vector<std::string>& toolkit_dirs,
                                                    const std::string& root,
                                                    const std::filesystem::path& folder) {
  std::string memo_key = root;
  for (const std::string& dir : toolkit_dirs) memo_key += '\0' + dir;
  Closure memoized;  // the memo's closure whose names file `folder` may lack
  {
    auto& [mutex, known] = closures();
    const std::lock_guard lock(mutex);
    if (auto found = known.find(memo_key); found != known.end()) {
      Closure& closure = found->second;
      if (folder.empty() || closure.text.empty() || !closure.kept_in.insert(folder).second) {
        return closure.names;
      }
      memoized.names = closure.names;
      memoized.text = closure.text;
    }
  }
  // The folder's names file (another process's result): one name a line, then a line "end".
  const std::filesystem::path file = persisted_closure(memo_key, toolkit_dirs, folder);
  std::optional<std::string> text;
  if (!file.empty()) {
    text = read_toolkit_names(file);
    if (text && !text->ends_with("\nend\n")) text.reset();
  }
  if (memoized.names) {  // a folder this process has not kept the closure in yet
    if (!file.empty() && !text) write_toolkit_names(file, memoized.text);
    return memoized.names;
  }
  if (text) {
    std::set<std::string> names;
    std::size_t at = 0;
    for (std::size_t end; (end = text->find('\n', at)) != text->size() - 1; at = end + 1) {
      names.insert(text->substr(at, end - at));
    }
    return publish(
        memo_key,
        Closure{std::make_shared<const ToolkitNames>(group_names(names)), std::move(*text), {}},
        folder);
  }
  std::set<std::string> names{root};
  std::set<std::pair<std::uint64_t, std::uint64_t>> visited;  // (device, inode); empty: no file
  std::set<std::string, std::less<>> tried;                   // candidates looked at
  std::vector<std::pair<std::string, std::string>> pending{{root, std::string()}};  // name, from
  while (!pending.empty()) {
    auto [name, from_dir] = std::move(pending.back());
    pending.pop_back();
    if (name.empty() || name.front() == '/') continue;
    std::vector<const std::string*> dirs;
    if (!from_dir.empty()) dirs.push_back(&from_dir);
    for (const std::string& dir : toolkit_dirs) dirs.push_back(&dir);
    for (const std::string* dir : dirs) {
      std::string candidate = *dir + "/" + name;
      if (!tried.insert(candidate).second) continue;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (!visited
               .insert(
                   {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)})
               .second) {
        continue;
      }
      bool stable = false;  // the closure is memoized as a whole: the file memo is not needed
      const std::shared_ptr<const FileScan> scan = read_scan(candidate, stable);
      for (const std::string& include : scan->includes) {
        names.insert(include);
        pending.emplace_back(include, parent_of(candidate));
      }
    }
  }
  Closure closure{std::make_shared<const ToolkitNames>(group_names(names)), {}, {}};
  if (!visited.empty()) {  // a name no toolkit file has costs no file
    for (const std::string& name : names) {
      if (name.find('\n') == std::string::npos) closure.text += name + '\n';
    }
    closure.text += "end\n";
    // A cache: a failed write costs time only.
    if (!file.empty()) write_toolkit_names(file, closure.text);
  }
  return publish(memo_key, std::move(closure), file.empty() ? std::filesystem::path() : folder);
}

void forget_toolkit_closures() {
  auto& [mutex, known] = closures();
  const std::lock_guard lock(mutex);
  known.clear();
}

}  // namespace cubby
