// The suite manifests of a store (format/recipe.hpp): <root>/manifests/<file name>.manifest, one
// per suite, and beside it <file name>.keys, the suite's keys (SuiteKeys: the key each recipe last
// had, what a fresh runner's read-ahead fetches), each replaced atomically (readers take no lock);
// writers merge under <root>/manifests/<file name>.lock so that two processes of one suite
// finishing together lose neither's recipes or keys.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubby/error.hpp"
#include "format/recipe.hpp"

namespace cubby {

// The file name stem of `suite`'s manifest: the name itself when it is 1..64 characters of
// [A-Za-z0-9._+-] and does not start with '.', else those characters of it (others as '_', at
// most 40) followed by '-' and 16 hex digits of its hash, so two suites never share a file.
std::string manifest_stem(std::string_view suite);
std::filesystem::path manifests_dir(const std::filesystem::path& root);
// <root>/manifests/<stem><suffix>: the file of `suite` that `suffix` names (".manifest", ".keys",
// ".lock", ".warm.lock", ".read-ahead.lock").
std::filesystem::path suite_file(const std::filesystem::path& root, std::string_view suite,
                                 std::string_view suffix);
std::filesystem::path manifest_path(const std::filesystem::path& root, std::string_view suite);

// `suite`'s manifest in the store at `root`: nullopt when there is none; Errc::corrupt (a damaged
// file, a newer format, a file of another suite) or Errc::io, with a message naming the file.
// With `opened`, the fstat of the file read (who wrote it: io::written_by_trusted).
Result<std::optional<Manifest>> load_manifest(const std::filesystem::path& root,
                                              std::string_view suite,
                                              struct stat* opened = nullptr);

// Merges `recent` into `suite`'s manifest (merge_recipes; a damaged or newer manifest is
// replaced, and so is one another user may have written, io::written_by_trusted: its recipes are
// never merged into a file of yours, which `cubby warm` would replay as yours) and writes it,
// mode 0644, when that changed it. Returns the bytes written, or nullopt when the
// manifest already held the same recipes in the same order. Errc::io when the store cannot be
// written.
Result<std::optional<std::string>> record_manifest(const std::filesystem::path& root,
                                                   std::string_view suite,
                                                   const std::vector<Recipe>& recent);

// `suite`'s keys file in the store at `root`.
std::filesystem::path suite_keys_path(const std::filesystem::path& root, std::string_view suite);
// `suite`'s keys as its keys file holds them; none when the file is missing, damaged, newer or
// another suite's.
std::vector<RecipeKey> load_suite_keys(const std::filesystem::path& root, std::string_view suite);
// Merges `recent` into `suite`'s keys (merge_suite_keys; a missing, damaged, newer or another
// suite's file counts as none and is replaced) and writes them when `recent` holds a recipe the
// file lacks or a new key of one (not for another order alone). Returns the bytes written, or
// nullopt when nothing was. Errc::io when the store cannot be written.
Result<std::optional<std::string>> record_suite_keys(const std::filesystem::path& root,
                                                     std::string_view suite,
                                                     const std::vector<RecipeKey>& recent);

// Writes `manifest` as its suite's manifest (mode 0644), replacing any (import, remote fetch).
// Errc::io.
Result<void> save_manifest(const std::filesystem::path& root, const Manifest& manifest);

// The file a run's misses touch for a prefetch of `suite` that waits for the first one
// (PrefetchStart::at_first_miss): <root>/manifests/<stem>.miss-<effective uid>, one per user (in a
// shared store another user's file may not be ours to touch).
std::filesystem::path suite_miss_path(const std::filesystem::path& root, std::string_view suite);
// Sets that file's time to now (creating it, mode 0644). A failure is not reported: a waiting
// prefetch then waits on, which costs time, never a kernel.
void touch_suite_miss(const std::filesystem::path& root, std::string_view suite);

// The suite names of the readable manifests of the store, sorted. Damaged files are skipped; when
// `problems` is given, it gets a message for each (naming the file).
std::vector<std::string> list_suites(const std::filesystem::path& root,
                                     std::vector<std::string>* problems = nullptr);

}  // namespace cubby
