// `cubby import FILE`: adds the entries of an archive written by `cubby export`, verifying each
// (checksum, the key it is named after, symbols of its CUBIN) before it is published; entries
// already present are kept. Members that are no entry file (other names, links, folders) are
// counted as foreign; entries of another format version (another cubby release) are counted and
// left out, never imported unverified.
#include <fstream>
#include <iostream>
#include <optional>

#include "archive.hpp"
#include "cli.hpp"
#include "gzip.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/manifests.hpp"
#include "storage/local/store_stats.hpp"
#include "storage/local/verify.hpp"

namespace cubby::cli {
namespace {

// What an import did: counts per outcome, the rejected entries' problems, the first write error.
struct ImportTally {
  std::uint64_t imported = 0;
  std::uint64_t present = 0;
  std::uint64_t rejected = 0;
  std::uint64_t foreign = 0;
  std::uint64_t other_format = 0;
  std::uint64_t bytes = 0;
  std::uint64_t manifests = 0;
  json problems = json::array();
  std::string write_error;
};

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

// The key a member is named after (<32 hex>.entry, in any folder), or nothing for a member that is
// no entry file.
std::optional<Key> member_key(const TarMember& member) {
  const std::size_t slash = member.name.rfind('/');
  const std::string base = slash == std::string::npos ? member.name : member.name.substr(slash + 1);
  if (!member.regular() || base.size() != 38 || !base.ends_with(".entry")) return std::nullopt;
  auto key = Key::parse(base.substr(0, 32));
  if (!key) return std::nullopt;
  return *key;
}

// Merges a suite manifest member (manifests/<stem>.manifest) into the store's: the recipes the
// store knows first, then the archive's. A member that does not decode is rejected.
void import_manifest(DiskTier& disk, const Common& common, const TarMember& member,
                     ImportTally& tally) {
  auto manifest = decode_manifest(member.bytes);
  if (!manifest) {
    ++tally.rejected;
    tally.problems.push_back({{"member", member.name}, {"problem", manifest.error().message}});
    if (!common.json) {
      std::cerr << "cubby: rejected " << member.name << ": " << manifest.error().message << '\n';
    }
    return;
  }
  auto local = load_manifest(disk.root(), manifest->suite);  // a damaged one is replaced
  if (local && *local) manifest->recipes = merge_recipes((*local)->recipes, manifest->recipes);
  if (!tally.write_error.empty()) return;
  if (auto saved = save_manifest(disk.root(), *manifest); !saved) {
    tally.write_error = saved.error().message;
    return;
  }
  ++tally.manifests;
}

// Imports one archive member into `disk` (after the first write error, only counts), verified.
void import_member(DiskTier& disk, const Common& common, const TarMember& member,
                   ImportTally& tally) {
  if (member.regular() && member.name.starts_with("manifests/") &&
      member.name.ends_with(".manifest")) {
    import_manifest(disk, common, member, tally);
    return;
  }
  const std::optional<Key> key = member_key(member);
  if (!key) {
    ++tally.foreign;
    return;
  }
  std::error_code exists_error;
  if (std::filesystem::exists(disk.path_of(*key), exists_error)) {
    ++tally.present;
    return;
  }
  auto checked = verify_entry(member.bytes, *key);
  if (!checked && checked.error().code == Errc::not_found) {
    ++tally.other_format;  // another cubby release's entry: not ours to verify or import
    return;
  }
  if (!checked) {
    ++tally.rejected;
    tally.problems.push_back({{"key", key->hex()}, {"problem", checked.error().message}});
    if (!common.json) {
      std::cerr << "cubby: rejected " << key->hex() << ": " << checked.error().message << '\n';
    }
    return;
  }
  if (!tally.write_error.empty()) return;
  if (auto written = disk.put(*key, member.bytes); !written) {
    tally.write_error = written.error().message;
    return;
  }
  ++tally.imported;
  tally.bytes += member.bytes.size();
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
                {"problems", tally.problems},
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
  DiskTier disk(config.dir);
  ImportTally tally;
  std::string defect = read_tar(
      in, kMaxEntryBytes, [&](TarMember&& member) { import_member(disk, common, member, tally); });
  if (gzipped && !unzipped.finish().empty())
    defect = unzipped.error() + (defect.empty() ? "" : " (" + defect + ")");
  if (tally.imported > 0) {
    (void)StoreStats(config.dir)
        .add({{"store_bytes", static_cast<std::int64_t>(tally.bytes)},
              {"store_entries", static_cast<std::int64_t>(tally.imported)}});
  }
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
  CLI::App* command = app.add_subcommand(
      "import", "Add the entries of an archive from `cubby export`, verifying each");
  command
      ->add_option("FILE", *file, "Archive to read (a tar file from `cubby export`, gzip'd or not)")
      ->required();
  add_common(*command, common);
  return {command, [&common, file] { return run_import(common, *file); }};
}

}  // namespace cubby::cli
