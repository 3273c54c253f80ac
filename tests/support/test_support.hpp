// Helpers shared by the test suites: temporary folders and environment overrides.
#pragma once

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>

#include "storage/local/disk.hpp"

// CUBBY_TEST_ASAN: 1 when the test is built with AddressSanitizer (GCC defines
// __SANITIZE_ADDRESS__, clang answers __has_feature(address_sanitizer)), else 0.
#if defined(__SANITIZE_ADDRESS__)
#define CUBBY_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUBBY_TEST_ASAN 1
#endif
#endif
#ifndef CUBBY_TEST_ASAN
#define CUBBY_TEST_ASAN 0
#endif

namespace cubby::testing {

// A fresh folder under the system temp folder, removed (recursively) on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("cubby-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Sets (or unsets, with nullopt) an environment variable for the scope; restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value)
      ::setenv(name_.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Makes `path` another real user's, as a second member of a group-shared store would leave it:
// chown to nobody's uid (65534 where there is no such user), mode kept. "" when done, else why it
// cannot be (only root may give a file away), for GTEST_SKIP.
inline std::string give_to_another_user(const std::filesystem::path& path) {
  if (::geteuid() != 0) {
    return "giving a file to another user needs root (this test runs as uid " +
           std::to_string(::geteuid()) + ")";
  }
  const passwd* nobody = ::getpwnam("nobody");
  const uid_t other = nobody != nullptr ? nobody->pw_uid : 65534;
  if (::lchown(path.c_str(), other, static_cast<gid_t>(-1)) != 0) {
    return "chown " + path.string() + " to uid " + std::to_string(other) +
           " failed: " + std::strerror(errno);
  }
  return {};
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// How many entries `disk` lists (a failed listing fails the test).
inline std::size_t count_entries(const DiskTier& disk) {
  std::size_t n = 0;
  EXPECT_TRUE(disk.list([&](const DiskEntryInfo&) { ++n; }).ok());
  return n;
}

}  // namespace cubby::testing
