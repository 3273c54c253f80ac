// `cubby import FILE`: adds the entries of an archive written by `cubby export`, verifying each
// (checksum, the key it is named after, symbols of its CUBIN) before it is published; entries
// already present are kept. Members that are no entry file (other names, links, folders) are
// counted as foreign; entries of another format version (another cubby release) are counted and
// left out, never imported unverified.
#include <fstream>
#include <iostream>

#include "archive.hpp"
#include "cli.hpp"
#include "storage/local/disk.hpp"
#include "storage/local/store_stats.hpp"
#include "storage/local/verify.hpp"

namespace cubby::cli {
namespace {

int run_import(const Common& common, const std::string& file) {
  const Config config = load_config(common);
  if (config.read_only) fail_with(kExitUsage, "CUBBY_READ_ONLY is set; unset it to import");
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    fail_with(kExitUsage, file + " is a folder; pass an archive file written by `cubby export`");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    fail_with(kExitUsage, "cannot read " + file + ": " + std::strerror(errno) +
                              "; pass an archive written by `cubby export`");
  }
  DiskTier disk(config.dir);
  std::uint64_t imported = 0;
  std::uint64_t present = 0;
  std::uint64_t rejected = 0;
  std::uint64_t foreign = 0;
  std::uint64_t other_format = 0;
  std::uint64_t bytes = 0;
  json problems = json::array();
  std::string write_error;
  const std::string defect = read_tar(in, kMaxEntryBytes, [&](TarMember&& member) {
    // The key is the member's file name: <32 hex>.entry.
    const std::size_t slash = member.name.rfind('/');
    const std::string base =
        slash == std::string::npos ? member.name : member.name.substr(slash + 1);
    auto key = member.regular() && base.size() == 38 && base.ends_with(".entry")
                   ? Key::parse(base.substr(0, 32))
                   : Result<Key>(fail(Errc::invalid_argument, ""));
    if (!key) {
      ++foreign;
      return;
    }
    std::error_code exists_error;
    if (std::filesystem::exists(disk.path_of(*key), exists_error)) {
      ++present;
      return;
    }
    auto checked = verify_entry(member.bytes, *key);
    if (!checked && checked.error().code == Errc::not_found) {
      ++other_format;  // another cubby release's entry: not ours to verify or import
      return;
    }
    if (!checked) {
      ++rejected;
      problems.push_back({{"key", key->hex()}, {"problem", checked.error().message}});
      if (!common.json) {
        std::cerr << "cubby: rejected " << key->hex() << ": " << checked.error().message << '\n';
      }
      return;
    }
    if (!write_error.empty()) return;
    if (auto written = disk.put(*key, member.bytes); !written) {
      write_error = written.error().message;
      return;
    }
    ++imported;
    bytes += member.bytes.size();
  });
  if (imported > 0) {
    (void)StoreStats(config.dir)
        .add({{"store_bytes", static_cast<std::int64_t>(bytes)},
              {"store_entries", static_cast<std::int64_t>(imported)}});
  }
  if (!write_error.empty()) fail_with(kExitFailed, write_error);
  if (common.json) {
    print_json({{"dir", config.dir.string()},
                {"file", file},
                {"imported", imported},
                {"bytes", bytes},
                {"present", present},
                {"rejected", rejected},
                {"foreign", foreign},
                {"other_format", other_format},
                {"problems", problems},
                {"archive_error", defect}});
  } else {
    std::cout << "imported " << imported << (imported == 1 ? " entry" : " entries") << " ("
              << format_bytes(bytes) << ") into " << config.dir.string() << "; " << present
              << " already present, " << rejected << " rejected, " << foreign
              << " foreign members skipped";
    if (other_format > 0) {
      std::cout << ", " << other_format
                << " of another cubby release's format left out (import them with that release)";
    }
    std::cout << '\n';
  }
  if (!defect.empty()) {
    fail_with(kExitFailed, file + ": " + defect +
                               "; write it again with `cubby export` (the entries before the "
                               "defect were imported)");
  }
  return rejected == 0 ? kExitOk : kExitFailed;
}

}  // namespace

Command add_import(CLI::App& app, Common& common) {
  auto file = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "import", "Add the entries of an archive from `cubby export`, verifying each");
  command->add_option("FILE", *file, "Archive to read")->required();
  add_common(*command, common);
  return {command, [&common, file] { return run_import(common, *file); }};
}

}  // namespace cubby::cli
