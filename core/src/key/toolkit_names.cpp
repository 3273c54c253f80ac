// The toolkit headers' closure of names; contract in toolkit_names.hpp.
#include "key/toolkit_names.hpp"

#include <sys/stat.h>

#include <mutex>
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

}  // namespace

std::shared_ptr<const ToolkitNames> toolkit_closure(const std::vector<std::string>& toolkit_dirs,
                                                    const std::string& root,
                                                    const std::filesystem::path& folder) {
  auto& [mutex, known] = memo_table<std::shared_ptr<const ToolkitNames>>();
  std::string memo_key = root;
  for (const std::string& dir : toolkit_dirs) memo_key += '\0' + dir;
  {
    const std::lock_guard lock(mutex);
    if (auto found = known.find(memo_key); found != known.end()) return found->second;
  }
  // Another process's result: one name a line, the file ending in a line "end".
  const std::filesystem::path file = persisted_closure(memo_key, toolkit_dirs, folder);
  if (!file.empty()) {
    if (auto text = read_toolkit_names(file); text && text->ends_with("\nend\n")) {
      std::set<std::string> names;
      std::size_t at = 0;
      for (std::size_t end; (end = text->find('\n', at)) != text->size() - 1; at = end + 1) {
        names.insert(text->substr(at, end - at));
      }
      auto result = std::make_shared<const ToolkitNames>(group_names(names));
      const std::lock_guard lock(mutex);
      return known.try_emplace(memo_key, std::move(result)).first->second;
    }
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
  if (!file.empty() && !visited.empty()) {  // a name no toolkit file has costs no file
    std::string text;
    for (const std::string& name : names) {
      if (name.find('\n') == std::string::npos) text += name + '\n';
    }
    write_toolkit_names(file, text + "end\n");  // a cache: a failed write costs time only
  }
  auto result = std::make_shared<const ToolkitNames>(group_names(names));
  const std::lock_guard lock(mutex);
  return known.try_emplace(memo_key, std::move(result)).first->second;
}

void forget_toolkit_closures() {
  auto& closures = memo_table<std::shared_ptr<const ToolkitNames>>();
  const std::lock_guard lock(closures.mutex);
  closures.known.clear();
}

}  // namespace cubby
