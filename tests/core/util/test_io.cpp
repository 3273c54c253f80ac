// Tests for core/src/util/io.cpp: whole-file reads and atomic, group-shareable writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "util/io.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;

using testing::read_text;
using testing::TempDir;
using testing::write_text;

// Sets the umask for the scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : previous_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(previous_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t previous_;
};

mode_t mode_of(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return 0;
  return info.st_mode & 07777;
}

std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& item : fs::directory_iterator(folder)) names.push_back(item.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Io, WriteThenReadRoundTrips) {
  TempDir dir;
  const fs::path file = dir.path() / "data.bin";
  const std::string binary("a\0b\xff\n", 5);
  ASSERT_TRUE(io::write_file_atomic(file, binary).ok());
  auto read = io::read_file(file);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(*read, binary);

  ASSERT_TRUE(io::write_file_atomic(file, "").ok());
  read = io::read_file(file);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "");

  const std::string big(5u << 20, 'q');
  ASSERT_TRUE(io::write_file_atomic(file, big).ok());
  read = io::read_file(file);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, big);
}

TEST(Io, MissingFileIsNotFound) {
  TempDir dir;
  const fs::path file = dir.path() / "absent";
  auto read = io::read_file(file);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::not_found);
  EXPECT_TRUE(contains(read.error().message, file.string())) << read.error().message;
}

TEST(Io, ReadingAFolderIsRefused) {
  TempDir dir;
  auto read = io::read_file(dir.path());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::corrupt);
  EXPECT_TRUE(contains(read.error().message, dir.path().string())) << read.error().message;
  EXPECT_TRUE(contains(read.error().message, "a folder")) << read.error().message;
}

// Without O_NONBLOCK and the fstat check, opening a FIFO waits for a writer for ever.
TEST(Io, ReadRefusesAFifoAtOnce) {
  TempDir dir;
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0664), 0);
  auto read = io::read_file(fifo);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::corrupt);
  EXPECT_TRUE(contains(read.error().message, "a FIFO, not a regular file")) << read.error().message;
  read = io::read_file_refresh(fifo, std::chrono::seconds(0));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::corrupt);
}

TEST(Io, ReadNeverFollowsALink) {
  TempDir dir;
  const fs::path target = dir.path() / "target";
  const fs::path link = dir.path() / "link";
  write_text(target, "another file's bytes");
  fs::create_symlink(target, link);
  auto read = io::read_file(link);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::corrupt);
  EXPECT_TRUE(contains(read.error().message, "symbolic link")) << read.error().message;
  // A link to /dev/zero would otherwise be read until memory runs out.
  const fs::path zero = dir.path() / "zero";
  fs::create_symlink("/dev/zero", zero);
  read = io::read_file(zero);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::corrupt);
}

TEST(Io, ReadRefusesDevicesAndFilesOverTheBound) {
  auto read = io::read_file("/dev/zero");  // never read: it has no end
  ASSERT_FALSE(read.ok());
  EXPECT_TRUE(contains(read.error().message, "a character device")) << read.error().message;
  TempDir dir;
  const fs::path file = dir.path() / "eleven";
  write_text(file, "0123456789a");
  read = io::read_file(file, 10);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::corrupt);
  EXPECT_TRUE(contains(read.error().message, "over 10 bytes")) << read.error().message;
  read = io::read_file(file, 11);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, "0123456789a");
}

TEST(Io, CreatesGroupSharedFoldersAndFilesWhateverTheUmask) {
  TempDir dir;
  const ScopedUmask umask(077);
  const fs::path file = dir.path() / "a" / "b" / "c" / "data";
  auto written = io::write_file_atomic(file, "x");
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(mode_of(file), 0664u);
  for (const fs::path& folder : {dir.path() / "a", dir.path() / "a" / "b", file.parent_path()}) {
    EXPECT_EQ(mode_of(folder), 02775u) << folder;
  }
  // Overwriting keeps the mode too.
  ASSERT_TRUE(io::write_file_atomic(file, "yy").ok());
  EXPECT_EQ(mode_of(file), 0664u);
}

TEST(Io, FailsWhenAParentIsARegularFile) {
  TempDir dir;
  const fs::path blocker = dir.path() / "blocker";
  std::ofstream(blocker) << "not a folder";
  const fs::path file = blocker / "sub" / "data";
  auto written = io::write_file_atomic(file, "x");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().code, Errc::io);
  EXPECT_TRUE(contains(written.error().message, blocker.string())) << written.error().message;
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"blocker"});
}

// Writes into a folder the writer may not write. As root permissions do not apply, so the
// write runs in a child process that drops to the `nobody` user.
TEST(Io, PermissionDeniedSaysWhatToDo) {
  TempDir dir;
  const fs::path locked = dir.path() / "locked";
  ASSERT_TRUE(io::write_file_atomic(locked / "seed", "s").ok());
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(locked.c_str(), 0555), 0);
  const fs::path file = locked / "data";

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(10);
    auto written = io::write_file_atomic(file, "x");
    if (written.ok()) ::_exit(11);
    if (written.error().code != Errc::io) ::_exit(12);
    if (!contains(written.error().message, "permission")) ::_exit(13);
    if (!contains(written.error().message, "CUBBY_READ_ONLY=1")) ::_exit(14);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: cannot drop privileges, 11: write succeeded, "
                                       "12: wrong code, 13/14: message lacks advice";
  ::chmod(locked.c_str(), 0755);
  EXPECT_EQ(names_in(locked), std::vector<std::string>{"seed"});
}

TEST(Io, LeavesNoTempFileAfterSuccess) {
  TempDir dir;
  const fs::path file = dir.path() / "data";
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(io::write_file_atomic(file, std::string(static_cast<std::size_t>(i), 'a')).ok());
  }
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"data"});
}

TEST(Io, LeavesNoTempFileAfterFailure) {
  TempDir dir;
  // rename(2) cannot replace a non-empty folder, so the write fails after the temp file exists.
  const fs::path target = dir.path() / "data";
  fs::create_directories(target / "inside");
  auto written = io::write_file_atomic(target, "payload");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().code, Errc::io);
  EXPECT_TRUE(contains(written.error().message, target.string())) << written.error().message;
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"data"});
}

// The exclusive open every temp file goes through: whatever is planted at the name, a link to
// another file (dangling or not) or a file, is refused and left as it was.
TEST(Io, NewFileOpenRefusesAPlantedLinkAndLeavesItsTargetAlone) {
  TempDir dir;
  const fs::path victim = dir.path() / "victim";
  write_text(victim, "precious");
  const fs::path link = dir.path() / "planted";
  fs::create_symlink(victim, link);
  const fs::path dangling = dir.path() / "dangling";
  fs::create_symlink(dir.path() / "would-be-created", dangling);
  for (const fs::path& planted : {link, dangling, victim}) {
    for (const io::FileMode mode : {io::FileMode::group_shared, io::FileMode::umask}) {
      errno = 0;
      const int fd = io::open_new_file(planted, mode);
      if (fd >= 0) ::close(fd);
      EXPECT_LT(fd, 0) << planted;
      EXPECT_EQ(errno, EEXIST) << planted;
    }
  }
  EXPECT_EQ(read_text(victim), "precious");
  EXPECT_FALSE(fs::exists(dir.path() / "would-be-created"));
  EXPECT_TRUE(fs::is_symlink(link));
}

// A link planted at the temp name an older cubby used ("<file>.tmp.<pid>") is never written
// through; the file itself is replaced (rename replaces a link at `path`, never its target).
TEST(Io, AtomicWriteNeverWritesThroughAPlantedLink) {
  TempDir dir;
  const fs::path victim = dir.path() / "victim";
  write_text(victim, "precious");
  const fs::path file = dir.path() / "data";
  fs::create_symlink(victim, dir.path() / ("data.tmp." + std::to_string(::getpid())));
  ASSERT_TRUE(io::write_file_atomic(file, "new").ok());
  EXPECT_EQ(read_text(file), "new");
  EXPECT_EQ(read_text(victim), "precious");
  const fs::path linked = dir.path() / "linked";  // a link at the destination itself
  fs::create_symlink(victim, linked);
  ASSERT_TRUE(io::write_file_atomic(linked, "replaced").ok());
  EXPECT_FALSE(fs::is_symlink(linked));
  EXPECT_EQ(read_text(victim), "precious");
}

TEST(Io, AtomicFileStreamsAndRemovesItsTempFileUnlessCommitted) {
  TempDir dir;
  const fs::path file = dir.path() / "archive.tar";
  {
    auto out = io::AtomicFile::create(file, io::FileMode::umask, false);
    ASSERT_TRUE(out.ok()) << out.error().message;
    ASSERT_TRUE(out->write("abandoned").ok());
    EXPECT_TRUE(fs::exists(out->temp_path()));
  }
  EXPECT_TRUE(names_in(dir.path()).empty());
  auto out = io::AtomicFile::create(file, io::FileMode::umask, false);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->write("part one, ").ok());
  ASSERT_TRUE(out->write("part two").ok());
  EXPECT_FALSE(fs::exists(file));
  ASSERT_TRUE(out->commit().ok());
  EXPECT_EQ(read_text(file), "part one, part two");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"archive.tar"});
}

TEST(Io, AppendNeverFollowsALink) {
  TempDir dir;
  const fs::path victim = dir.path() / "victim";
  write_text(victim, "precious");
  const fs::path journal = dir.path() / "journal";
  fs::create_symlink(victim, journal);
  EXPECT_FALSE(io::append_file(journal, "x=1\n").ok());
  EXPECT_EQ(read_text(victim), "precious");
}

TEST(Io, TempPathsAreUniqueAndWellFormed) {
  const fs::path base = "/some/folder/file.entry";
  const std::string prefix = base.string() + ".tmp." + std::to_string(::getpid()) + ".";
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string temp = io::temp_path_for(base).string();
    ASSERT_EQ(temp.substr(0, prefix.size()), prefix) << temp;
    const std::string random = temp.substr(prefix.size());
    EXPECT_EQ(random.size(), 16u) << temp;
    EXPECT_EQ(random.find_first_not_of("0123456789abcdef"), std::string::npos) << temp;
    EXPECT_TRUE(io::is_temp_name_of("file.entry", fs::path(temp).filename().string())) << temp;
    seen.insert(temp);
  }
  EXPECT_EQ(seen.size(), 1000u);
  // What gc may take for cubby's own temp file: exactly that shape, nothing else.
  for (const char* foreign :
       {"file.entry.tmp.", "file.entry.tmp.backup", "file.entry.tmp.12.0123456789abcde",
        "file.entry.tmp.12.0123456789ABCDEF", "file.entry.tmp.x2.0123456789abcdef",
        "file.entry.tmp..0123456789abcdef", "file.entry.tmp.12.0123456789abcdef.old",
        "other.entry.tmp.12.0123456789abcdef"}) {
    EXPECT_FALSE(io::is_temp_name_of("file.entry", foreign)) << foreign;
  }
}

TEST(Io, ConcurrentWritersLeaveOneWholeFile) {
  TempDir dir;
  const fs::path file = dir.path() / "shared";
  std::vector<std::string> contents;
  for (int t = 0; t < 4; ++t) {
    contents.push_back(
        std::string(1000u * static_cast<std::size_t>(t + 1), static_cast<char>('a' + t)));
  }
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        EXPECT_TRUE(io::write_file_atomic(file, contents[static_cast<std::size_t>(t)]).ok());
        auto read = io::read_file(file);
        EXPECT_TRUE(read.ok());
        if (read.ok()) {
          EXPECT_NE(std::find(contents.begin(), contents.end(), *read), contents.end());
        }
      }
    });
  }
  for (auto& writer : writers) writer.join();
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"shared"});
}

// write_all: the one write loop (warm_pool's task pipes, the worker's replies, exports).
TEST(WriteAll, WritesEverythingThroughAPipeSmallerThanTheBytes) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string bytes(1 << 20, 'x');  // far beyond a pipe's 64 KiB: many short writes
  std::string got;
  std::thread reader([&] {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0)
      got.append(buffer, static_cast<std::size_t>(n));
  });
  EXPECT_EQ(io::write_all(fds[1], bytes), 0);
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  EXPECT_EQ(got, bytes);
}

TEST(WriteAll, GivesTheErrnoOfTheWriteThatFailed) {
  EXPECT_EQ(io::write_all(-1, "x"), EBADF);
  EXPECT_EQ(io::write_all(-1, ""), 0);  // nothing to write, nothing written
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  const auto previous = ::signal(SIGPIPE, SIG_IGN);
  EXPECT_EQ(io::write_all(fds[1], "to nobody"), EPIPE);  // the reader is gone (warm_pool's case)
  ::signal(SIGPIPE, previous);
  ::close(fds[1]);
}

}  // namespace
}  // namespace cubby
