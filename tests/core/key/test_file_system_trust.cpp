// Which file systems' stats prove a header unchanged (core/src/key/file_system_trust.cpp).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cubby/cache.hpp"
#include "key/file_system_trust.hpp"
#include "key/scan_record.hpp"
#include "test_support.hpp"

namespace cubby {
namespace {

using testing::TempDir;
using testing::write_text;

TEST(FileSystemTrust, OnlyFileSystemsWhoseStatsProveAFileUnchangedAreTrusted) {
  EXPECT_TRUE(trusted_file_system(0xEF53));       // ext4
  EXPECT_TRUE(trusted_file_system(0x01021994));   // tmpfs
  EXPECT_TRUE(trusted_file_system(0x58465342));   // XFS
  EXPECT_TRUE(trusted_file_system(0x794C7630));   // overlayfs (its layers: stat_trusted)
  EXPECT_FALSE(trusted_file_system(0x6969));      // NFS
  EXPECT_FALSE(trusted_file_system(0xFF534D42));  // CIFS
  EXPECT_FALSE(trusted_file_system(0x65735546));  // FUSE
  EXPECT_FALSE(trusted_file_system(0x01021997));  // 9p
  // A read-only image rebuilt and mounted at the same path keeps device, inode, size, mtime and
  // ctime of every file (SquashFS: inodes in tree order, a reused loop device).
  EXPECT_FALSE(trusted_file_system(0x73717368));  // SquashFS
  EXPECT_FALSE(trusted_file_system(0xE0F5E1E2));  // EROFS
  EXPECT_FALSE(trusted_file_system(0x9660));      // ISO 9660
  EXPECT_FALSE(stat_trusted("/some/header.h", 0x73717368));
}

// Apptainer's root: an overlay whose lower layer is the SquashFS image.
constexpr const char* kMountinfo =
    "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
    "40 22 0:35 / /opt/app rw,relatime - overlay overlay "
    "rw,lowerdir=/var/apptainer/mnt/session/rootfs:/var/lower\\040two,upperdir=/u,workdir=/w\n"
    "41 40 0:36 / /opt/app/sub rw - tmpfs tmpfs rw\n"
    "42 22 7:0 / /var/apptainer/mnt/session/rootfs ro - squashfs /dev/loop0 ro\n";

TEST(FileSystemTrust, AnOverlaysLowerFoldersAreReadFromTheMountThatHoldsThePath) {
  EXPECT_EQ(overlay_lower_dirs(kMountinfo, "/opt/app/include/h.cuh"),
            (std::vector<std::string>{"/var/apptainer/mnt/session/rootfs", "/var/lower two"}));
  EXPECT_TRUE(overlay_lower_dirs(kMountinfo, "/opt/app/sub/h.cuh").empty());      // a tmpfs inside
  EXPECT_TRUE(overlay_lower_dirs(kMountinfo, "/opt/application/h.cuh").empty());  // not a prefix
  EXPECT_TRUE(overlay_lower_dirs(kMountinfo, "/home/h.cuh").empty());             // ext4 root
  EXPECT_TRUE(overlay_lower_dirs("garbage\n\n- - -\n", "/x").empty());
}

// A SquashFS image rebuilt with one header edited and mounted again at the same path (as an
// Apptainer image is): every stat field of the header is the same, and the old kernel was served.
// The key must follow the header's content. Needs root, mksquashfs and a loop device.
class SquashfsImage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting an image needs root";
    if (std::system("command -v mksquashfs >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "mksquashfs is not installed (apt-get install squashfs-tools)";
    }
    std::filesystem::create_directories(mount_point_);
    if (!mount_with("#define VALUE 0x11111111\n")) {
      GTEST_SKIP() << "this machine cannot mount a loop image (no loop device or no privilege)";
    }
  }
  void TearDown() override { unmount(); }

  // Builds the image with h.cuh holding `header` (mtime fixed) and mounts it read-only.
  bool mount_with(const std::string& header) {
    write_text(dir_ / "tree/h.cuh", header);
    const std::string tree = (dir_ / "tree").string();
    const std::string image = (dir_ / "image.sqfs").string();
    const std::string make = "touch -d @1700000000 " + tree + "/h.cuh " + tree + " && mksquashfs " +
                             tree + " " + image + " -noappend -quiet -no-progress >/dev/null 2>&1";
    if (std::system(make.c_str()) != 0) return false;
    mounted_ =
        std::system(("mount -o loop,ro " + image + " " + mount_point_.string() + " >/dev/null 2>&1")
                        .c_str()) == 0;
    return mounted_;
  }
  void unmount() {
    if (mounted_) (void)std::system(("umount " + mount_point_.string()).c_str());
    mounted_ = false;
  }

  TempDir dir_{"squashfs"};
  std::filesystem::path mount_point_ = dir_ / "mnt";
  bool mounted_ = false;
};

TEST_F(SquashfsImage, ARebuiltImageAtTheSameMountGivesTheEditedHeadersKernel) {
  const std::string header = (mount_point_ / "h.cuh").string();
  struct statfs fs {};
  ASSERT_EQ(::statfs(header.c_str(), &fs), 0);
  EXPECT_FALSE(stat_trusted(header, static_cast<std::int64_t>(fs.f_type)));
  CompileRequest request;
  request.source = "#include \"h.cuh\"\n__device__ int value = VALUE;\n";
  request.program_name = "image.cu";
  request.options = {"-I" + mount_point_.string()};
  request.arch = "sm_90";
  Config config;
  config.dir = dir_ / "store";
  struct stat before {};
  ASSERT_EQ(::stat(header.c_str(), &before), 0);
  Key first;
  {
    Cache cache(config);
    first = cache.compile(request).key;
  }
  unmount();
  ASSERT_TRUE(mount_with("#define VALUE 0x22222222\n"));
  struct stat after {};
  ASSERT_EQ(::stat(header.c_str(), &after), 0);
  if (!FileScan::same_state(before, after)) {
    GTEST_SKIP() << "the rebuilt image's header changed its stat (another loop device?): the "
                    "case this test is for did not arise";
  }
  Cache cache(config);
  const CacheResult again = cache.compile(request);
  EXPECT_NE(again.key, first) << "the key did not follow the edited header in the image";
  EXPECT_EQ(again.tier, Source::compiled);
  const std::string cubin = again.entry->payload;
  EXPECT_NE(cubin.find(std::string("\x22\x22\x22\x22", 4)), std::string::npos);
}

}  // namespace
}  // namespace cubby
