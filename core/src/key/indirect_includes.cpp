// What reaches past the literal includes of one scan, to a fixpoint; contract in
// header_scanner.hpp.
#include <algorithm>

#include "key/folder_fingerprint.hpp"
#include "key/header_scanner.hpp"
#include "key/toolkit_names.hpp"
#include "util/io.hpp"

namespace cubby {

void Scanner::scan_toolkit_names() {
  std::set<std::string> done_roots;
  bool any_names = false;
  for (const std::string& dir : include_dirs_) {
    const Folder& listed = folder(dir);
    any_names = any_names || (listed.is_dir && (!listed.names || !listed.names->empty()));
  }
  if (!any_names) {
    // The result now depends on every include folder staying empty (or missing).
    for (const std::string& dir : include_dirs_) folder(dir).every_name = true;
    return;
  }
  while (true) {
    std::vector<std::string> roots;
    for (const std::string& root : toolkit_roots_) {
      if (done_roots.insert(root).second) roots.push_back(root);
    }
    if (roots.empty()) return;
    for (const std::string& root : roots) {
      for (const auto& [first, names] : *toolkit_closure(toolkit_dirs_, root, place_.folder())) {
        for (std::size_t d = 0; d < include_dirs_.size(); ++d) {
          if (!may_hold(include_dirs_[d], first)) continue;
          for (const std::string& name : names) try_candidate(name, include_dirs_[d] + "/" + name);
        }
      }
    }
  }
}

void Scanner::scan_indirect() {
  for (std::size_t before = 0, now = 1; before != now;) {
    before = progress();
    resolve_computed_includes();
    resolve_test_macro_calls();
    scan_toolkit_names();
    now = progress();
  }
}

void Scanner::resolve_computed_includes() {
  for (std::size_t done = 0; done != sources_.size();) {
    for (; defined_ < sources_.size(); ++defined_) {
      computed_.add_definitions(*sources_[defined_].defines);
    }
    done = sources_.size();
    for (std::size_t i = 0; i < done; ++i) {
      const std::vector<std::string>* sites = sources_[i].computed;
      const std::vector<std::string> own_dirs = sources_[i].own_dirs;  // resolve() appends
      const std::string where = sources_[i].where;
      for (const std::string& entry : *sites) {
        ComputedSite site;
        if (!parse_computed_site(entry, site)) continue;
        resolve_operand(site.operand, where + site.line + ": " + site.directive, own_dirs);
      }
    }
  }
}

void Scanner::resolve_operand(const std::string& operand, const std::string& what,
                              const std::vector<std::string>& own_dirs) {
  const OperandNames names = computed_.expand(operand);  // a copy: resolve() may add more
  if (!names.unbounded.empty()) {
    cover_trees(what, names.unbounded, own_dirs);
    return;
  }
  bool found = false;
  for (const std::string& name : names.names) found = resolve(name, own_dirs) || found;
  // The toolkit's folders are asked only here, for an operand no searched folder answered.
  found = found || std::any_of(names.names.begin(), names.names.end(),
                               [&](const std::string& name) { return in_toolkit(name); });
  // No name it can expand to is a file, and they hold a macro the scan knows no definition of:
  // where NVRTC reads the include, that macro may be defined (NVRTC's predefined ones, a toolkit
  // header's CCCL_VERSION) and name a header of these folders. A name fully known is keyed as an
  // absent candidate instead (NVRTC cannot read it either).
  if (!found && computed_.holds_unknown_macro(names)) {
    cover_trees(what,
                "no header name it expands to (" + names.names.front() +
                    (names.names.size() > 1 ? ", ..." : "") +
                    ") is a file, and it is built from a macro the scan knows no definition of",
                own_dirs);
  }
}

void Scanner::cover_trees(const std::string& what, const std::string& why,
                          const std::vector<std::string>& own_dirs) {
  covered_trees_ = true;
  std::vector<std::string> trees = own_dirs;
  trees.insert(trees.end(), search_dirs_.begin(), search_dirs_.end());
  for (const std::string& tree : trees) {
    if (!fingerprinted_.insert(tree).second) continue;
    const FolderTreeFingerprint fingerprint = fingerprint_folder_tree(tree);
    if (!fingerprint.ok) {
      unresolvable_.push_back(
          what + ": " + why + ", and the folder tree " + tree +
          " it could read from cannot be fingerprinted instead (" + fingerprint.why +
          "): give the header name literally, or keep that folder's tree smaller");
      continue;
    }
    HeaderDigest digest;
    digest.include = std::string(kFolderTreeInclude);
    digest.path = tree;
    digest.content_hash = fingerprint.hash;
    out_.push_back(std::move(digest));
  }
}

void Scanner::resolve_test_macro_calls() {
  for (std::size_t done = 0; done != sources_.size();) {
    done = sources_.size();
    std::set<std::string, std::less<>> macros;
    struct Forward {
      std::string_view macro;
      std::string_view target;
      const MacroSource* source;
    };
    std::vector<Forward> forwards;
    for (const MacroSource& source : sources_) {
      macros.insert(source.test_macros->begin(), source.test_macros->end());
      for (const std::string& forward : *source.forwards) {
        const std::size_t space = forward.find(' ');
        forwards.push_back({std::string_view(forward).substr(0, space),
                            std::string_view(forward).substr(space + 1), &source});
      }
    }
    if (macros.empty()) return;      // the common case: nothing to resolve
    for (bool grew = true; grew;) {  // M tests what it passes to a test macro W
      grew = false;
      for (const auto& [macro, target, source] : forwards) {
        const std::string_view callee = target.substr(0, target.find(' '));
        if (!macros.contains(callee) || macros.contains(macro)) continue;
        if (target.ends_with(" *")) {
          unresolvable_.push_back(
              located(*source, "define " + std::string(macro)) + "#define " + std::string(macro) +
              ": passes one of several parameters to the include-test " + "macro " +
              std::string(callee) + ", which the scan does not follow to its callers");
        }
        macros.emplace(macro);
        grew = true;
      }
    }
    test_macros_ = macros;
    for (std::size_t i = 0; i < done; ++i) {
      // Copies: resolve() appends to sources_.
      const std::vector<std::string>* calls = sources_[i].calls;
      const std::vector<std::string> own_dirs = sources_[i].own_dirs;
      const MacroSource source = sources_[i];
      for (const std::string& call : *calls) {
        const std::size_t space = call.find(' ');
        const std::string_view macro = std::string_view(call).substr(0, space);
        const std::string_view argument = std::string_view(call).substr(space + 1);
        if (!macros.contains(macro)) continue;
        if (argument.front() == '"' || argument.front() == '<') {
          resolve(argument.substr(1, argument.size() - 2), own_dirs);
        } else if (argument != "?") {  // an identifier: a computed include test
          const std::string what =
              located(source, macro) + std::string(macro) + "(" + std::string(argument) + ")";
          resolve_operand(std::string(argument), what, own_dirs);
        } else {
          unresolvable_.push_back(located(source, macro) + std::string(macro) +
                                  "(...): an include-test macro called with arguments the "
                                  "scan does not read (pass one header name or one macro)");
        }
      }
    }
  }
}

std::string Scanner::located(const MacroSource& source, std::string_view word) const {
  std::string text;
  if (source.where == kSourceMark) {
    text = std::string(source_);
  } else if (auto read = io::read_file(source.where.substr(0, source.where.size() - 1))) {
    text = std::move(*read);
  }
  const std::size_t at = text.find(word);
  const std::string line =
      at == std::string::npos
          ? std::string("?")
          : std::to_string(1 +
                           std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
  return source.where + line + ": ";
}

}  // namespace cubby
