// Tests for core/src/io.cpp: whole-file reads and atomic, group-shareable writes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "io.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

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

TEST(Io, ReadingAFolderIsAnIoError) {
  TempDir dir;
  auto read = io::read_file(dir.path());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::io);
  EXPECT_TRUE(contains(read.error().message, dir.path().string())) << read.error().message;
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
    seen.insert(temp);
  }
  EXPECT_EQ(seen.size(), 1000u);
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

}  // namespace
}  // namespace cubby
