// `cubby import FILE`: adds the entries of an archive written by `cubby export`, verifying each
// (checksum, the key it is named after, symbols of its CUBIN) before it is published; entries
// already present are kept. Members that are no entry file (other names, links, folders) are
// counted as foreign; entries of another format version (another cubby release) are counted and
// left out, never imported unverified.
#include <fstream>
#include <iostream>

#include "archive.hpp"
#include "cli.hpp"
#include "gzip.hpp"
#include "store/exchange.hpp"

namespace cubby::cli {
namespace {

// Opens the archive `file`; usage failure when it is a folder or cannot be read.
std::ifstream open_archive(const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    fail_with(kExitUsage, file + " is a folder; pass an archive file written by `cubby export`");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    fail_with(kExitUsage, "cannot read " + file + ": " + std::strerror(errno) +
                              "; pass an archive written by `cubby export`");
  }
  return in;
}

// Imports one archive member (import_member), saying on stderr why it was rejected if it was.
void import_one(Store& store, const Common& common, const TarMember& member, ImportTally& tally) {
  const std::size_t problems = tally.problems.size();
  import_member(store, member.name, member.regular(), member.bytes, tally);
  if (common.json) return;
  for (std::size_t i = problems; i < tally.problems.size(); ++i) {
    const ImportProblem& problem = tally.problems[i];
    std::cerr << "cubby: rejected " << (problem.key.empty() ? problem.member : problem.key) << ": "
              << problem.problem << '\n';
  }
}

// The rejected members' problems as --json prints them.
json problems_json(const ImportTally& tally) {
  json problems = json::array();
  for (const ImportProblem& problem : tally.problems) {
    if (problem.key.empty()) {
      problems.push_back({{"member", problem.member}, {"problem", problem.problem}});
    } else {
      problems.push_back({{"key", problem.key}, {"problem", problem.problem}});
    }
  }
  return problems;
}

void print_import_report(const Common& common, const Config& config, const std::string& file,
                         const ImportTally& tally, const std::string& defect) {
  if (common.json) {
    print_json({{"dir", config.dir.string()},
                {"file", file},
                {"imported", tally.imported},
                {"bytes", tally.bytes},
                {"manifests", tally.manifests},
                {"present", tally.present},
                {"rejected", tally.rejected},
                {"foreign", tally.foreign},
                {"other_format", tally.other_format},
                {"problems", problems_json(tally)},
                {"archive_error", defect}});
    return;
  }
  std::cout << "imported " << tally.imported << (tally.imported == 1 ? " entry" : " entries")
            << " (" << format_bytes(tally.bytes) << ") and the recipes of " << tally.manifests
            << (tally.manifests == 1 ? " suite" : " suites") << " into " << config.dir.string()
            << "; " << tally.present << " already present, " << tally.rejected << " rejected, "
            << tally.foreign << " foreign members skipped";
  if (tally.other_format > 0) {
    std::cout << ", " << tally.other_format
              << " of another cubby release's format left out (import them with that release)";
  }
  std::cout << '\n';
}

int run_import(const Common& common, const std::string& file) {
  const Config config = load_config(common);
  require_writable(config, "import");
  std::ifstream file_in = open_archive(file);
  // A .tar.gz is read like a .tar; a plain archive straight from the file (its size is known).
  const bool gzipped = starts_with_gzip_magic(file_in);
  GunzipBuf unzipped(file_in);
  std::istream unzipped_in(&unzipped);
  std::istream& in = gzipped ? unzipped_in : file_in;
  Store store(config.dir);
  ImportTally tally;
  std::string defect = read_tar(
      in, kMaxEntryBytes, [&](TarMember&& member) { import_one(store, common, member, tally); });
  if (gzipped && !unzipped.finish().empty())
    defect = unzipped.error() + (defect.empty() ? "" : " (" + defect + ")");
  finish_import(store, tally);
  if (!tally.write_error.empty()) fail_with(kExitFailed, tally.write_error);
  const std::uint64_t cubby_members =
      tally.imported + tally.present + tally.rejected + tally.other_format + tally.manifests;
  if (defect.empty() && cubby_members == 0 && tally.foreign > 0) {
    fail_with(kExitFailed, file + " holds no cubby entries (" + std::to_string(tally.foreign) +
                               " other members): it is not an archive from `cubby export`; "
                               "nothing was imported");
  }
  print_import_report(common, config, file, tally, defect);
  if (!defect.empty()) {
    fail_with(kExitFailed, file + ": " + defect +
                               "; write it again with `cubby export` (the entries before the "
                               "defect were imported)");
  }
  return tally.rejected == 0 ? kExitOk : kExitFailed;
}

}  // namespace

Command add_import(CLI::App& app, Common& common) {
  auto file = std::make_shared<std::string>();
  CLI::App* command = add_command(
      app, "import", "Add the entries of an archive from `cubby export`, verifying each");
  add_option(*command, "FILE", *file,
             "Archive to read (a tar file from `cubby export`, gzip'd or not)")
      ->required();
  add_common(*command, common);
  return {command, [&common, file] { return run_import(common, *file); }};
}

}  // namespace cubby::cli
