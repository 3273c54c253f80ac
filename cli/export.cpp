// `cubby export FILE`: every good entry of the store and every suite's recipes in one archive
// (ustar; see archive.hpp), to carry a warm store to a fresh machine (`cubby import FILE` there).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>

#include "archive.hpp"
#include "cli.hpp"
#include "gzip.hpp"
#include "store/exchange.hpp"
#include "util/io.hpp"

namespace cubby::cli {
namespace {

// Where FILE's bytes go. A new path or a regular file: a new temp file beside FILE (unpredictable
// name, O_CREAT|O_EXCL|O_NOFOLLOW: a planted file or link is never opened) renamed over it once
// complete, so an interrupted export leaves no partial archive. A FIFO or a character device (a
// pipe, /dev/null, a terminal), also through links: written in place, never created, truncated or
// replaced. Anything else (a folder, a link to a file or a folder, a socket, a block device) is
// refused: export never replaces what is not a regular file, nor writes a file through a link.
class Destination {
 public:
  explicit Destination(const std::string& file) {
    struct stat here {};
    if (::lstat(file.c_str(), &here) != 0 || S_ISREG(here.st_mode)) {
      auto temp = io::AtomicFile::create(file, io::FileMode::umask, false);
      if (!temp) {
        fail_with(kExitFailed, temp.error().message + "; check that the folder of " + file +
                                   " exists and is writable");
      }
      temp_.emplace(std::move(*temp));
      return;
    }
    struct stat target {};
    const bool stream =
        ::stat(file.c_str(), &target) == 0 && (S_ISFIFO(target.st_mode) || S_ISCHR(target.st_mode));
    if (!stream) {
      const bool link = S_ISLNK(here.st_mode);
      fail_with(kExitUsage, "not writing " + file + ": it is " + io::file_type_name(here.st_mode) +
                                (link && ::stat(file.c_str(), &target) == 0
                                     ? " to " + io::file_type_name(target.st_mode)
                                     : std::string()) +
                                ", which export never replaces nor writes through; choose a new "
                                "path or a regular file");
    }
    fd_ = ::open(file.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) {
      fail_with(kExitFailed,
                "cannot open " + file + ": " + std::strerror(errno) + "; check its permissions");
    }
  }
  Destination(const Destination&) = delete;
  Destination& operator=(const Destination&) = delete;
  ~Destination() {
    if (fd_ >= 0) ::close(fd_);
  }
  // "" or what went wrong.
  std::string write(std::string_view bytes) {
    if (temp_) {
      auto written = temp_->write(bytes);
      return written ? std::string() : written.error().message;
    }
    const int error = io::write_all(fd_, bytes);
    return error == 0 ? std::string() : std::strerror(error);
  }
  // Publishes the archive (renames the temp file over FILE); "" or what went wrong.
  std::string commit() {
    if (!temp_) return {};
    auto committed = temp_->commit();
    return committed ? std::string() : committed.error().message;
  }

 private:
  std::optional<io::AtomicFile> temp_;
  int fd_ = -1;
};

// Where the archive's bytes go: the destination, through gzip when the file name asks for it.
class ArchiveOut {
 public:
  ArchiveOut(Destination& file, bool gzip) : file_(file) {
    if (gzip) gzip_.emplace([this](std::string_view bytes) { return file_.write(bytes); });
  }
  // "" or what went wrong.
  std::string write(std::string_view bytes) {
    return gzip_ ? gzip_->write(bytes) : file_.write(bytes);
  }
  std::string finish() { return gzip_ ? gzip_->finish() : std::string(); }

 private:
  Destination& file_;
  std::optional<GzipWriter> gzip_;
};

// Appends what `write` puts in a stream (one tar member, the end marker) to `out`; false if it
// did not fit or could not be written (`why` says why).
template <class Write>
bool append_to(ArchiveOut& out, Write&& write, std::string& why) {
  std::ostringstream part;
  if (!write(part)) {
    why = "a member does not fit the archive format";
    return false;
  }
  why = out.write(part.view());
  return why.empty();
}

int run_export(const Common& common, const std::string& file) {
  const Config config = load_config(common);
  const Store store(config.dir);
  Destination destination(file);
  ArchiveOut archive(destination, wants_gzip(file));
  std::uint64_t exported = 0;
  std::uint64_t bytes = 0;
  std::uint64_t manifests = 0;
  std::uint64_t skipped = 0;
  std::string why;
  // Every good entry, then every suite's manifest (so that `cubby warm` on the importing machine
  // knows what to compile).
  const auto append_member = [&](const ExportMember& member) {
    if (!append_to(
            archive,
            [&](std::ostream& part) {
              return write_tar_member(part, member.name, member.bytes, member.mtime);
            },
            why)) {
      return false;
    }
    if (member.kind == ExportMember::Kind::manifest) {
      ++manifests;
    } else {
      ++exported;
      bytes += member.bytes.size();
    }
    return true;
  };
  const auto skip = [&](const std::string& message) {
    std::cerr << "cubby: " << message << '\n';
    ++skipped;
  };
  if (auto listed = export_store(store, append_member, skip); !listed) {
    fail_with(kExitFailed, listed.error().message);
  }
  bool written = why.empty();
  if (written) {
    written = append_to(
        archive, [](std::ostream& part) { return write_tar_end(part); }, why);
  }
  if (written) {
    why = archive.finish();
    written = why.empty();
  }
  if (written) {
    why = destination.commit();
    written = why.empty();
  }
  if (!written) {
    fail_with(kExitFailed, "cannot write " + file + ": " + why +
                               "; free space or choose another path (nothing was written there)");
  }
  if (common.json) {
    print_json({{"dir", config.dir.string()},
                {"file", file},
                {"entries", exported},
                {"bytes", bytes},
                {"manifests", manifests},
                {"skipped_bad", skipped},
                {"gzip", wants_gzip(file)}});
  } else {
    std::cout << "exported " << exported << (exported == 1 ? " entry" : " entries") << " ("
              << format_bytes(bytes) << ") and the recipes of " << manifests
              << (manifests == 1 ? " suite" : " suites") << " to " << file << '\n';
    if (skipped > 0) std::cout << "skipped " << skipped << " bad or unreadable entries\n";
  }
  return kExitOk;
}

}  // namespace

Command add_export(CLI::App& app, Common& common) {
  auto file = std::make_shared<std::string>();
  CLI::App* command =
      add_command(app, "export", "Write every good entry to one archive (for `cubby import`)");
  add_option(*command, "FILE", *file,
             "Archive to write: a tar file, gzip'd when FILE ends with .tar.gz or .tgz; a "
             "FIFO or a character device is written in place, a folder or a link to a "
             "file is refused")
      ->required();
  add_common(*command, common);
  return {command, [&common, file] { return run_export(common, *file); }};
}

}  // namespace cubby::cli
