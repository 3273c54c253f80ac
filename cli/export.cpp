// `cubby export FILE`: every good entry of the store in one archive (ustar; see archive.hpp), to
// carry a warm store to a fresh machine (`cubby import FILE` there).
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "archive.hpp"
#include "cli.hpp"
#include "cubby/storage/verify.hpp"

namespace cubby::cli {
namespace {

int run_export(const Common& common, const std::string& file) {
  const Config config = load_config(common);
  DiskTier disk(config.dir);
  // Written beside FILE and renamed over it: an interrupted export leaves no partial archive.
  const std::string temp = file + ".tmp." + std::to_string(::getpid());
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  if (!out) {
    fail_with(kExitFailed, "cannot create " + temp + ": " + std::strerror(errno) +
                               "; check that the folder of " + file + " exists and is writable");
  }
  std::uint64_t exported = 0;
  std::uint64_t bytes = 0;
  std::uint64_t skipped = 0;
  for (const auto& info : list_entries(disk)) {
    auto read = disk.peek(info.key);
    if (!read || !read->has_value()) continue;  // removed meanwhile
    const std::string& entry = **read;
    if (entry_format(entry) == EntryFormat::current) {  // another release's: carried as it is
      if (auto checked = verify_entry(entry, info.key); !checked) {
        std::cerr << "cubby: skipping bad entry " << info.key.hex() << ": "
                  << checked.error().message << " (run `cubby verify --fix`)\n";
        ++skipped;
        continue;
      }
    }
    const std::string hex = info.key.hex();
    const std::string name = "entries/" + hex.substr(0, 2) + "/" + hex + ".entry";
    if (!write_tar_member(out, name, entry, unix_ms_of(info.modified) / 1000)) break;
    ++exported;
    bytes += entry.size();
  }
  write_tar_end(out);
  out.close();
  if (!out || std::rename(temp.c_str(), file.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temp.c_str());
    fail_with(kExitFailed,
              "cannot write " + file + ": " + why + "; free space or choose another path");
  }
  if (common.json) {
    print_json({{"dir", config.dir.string()},
                {"file", file},
                {"entries", exported},
                {"bytes", bytes},
                {"skipped_bad", skipped}});
  } else {
    std::cout << "exported " << exported << (exported == 1 ? " entry" : " entries") << " ("
              << format_bytes(bytes) << ") to " << file << '\n';
    if (skipped > 0) std::cout << "skipped " << skipped << " bad entries\n";
  }
  return kExitOk;
}

}  // namespace

Command add_export(CLI::App& app, Common& common) {
  auto file = std::make_shared<std::string>();
  CLI::App* command =
      app.add_subcommand("export", "Write every good entry to one archive (for `cubby import`)");
  command->add_option("FILE", *file, "Archive to write (a tar file)")->required();
  add_common(*command, common);
  return {command, [&common, file] { return run_export(common, *file); }};
}

}  // namespace cubby::cli
