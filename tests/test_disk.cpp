// Unwritable and full output directories: an --out that cannot be written is a usage error (exit 2,
// naming the directory) before any data is loaded; a disk that fills up at a checkpoint stops the run
// (exit 1) with a message that names the intact previous checkpoint, leaves no temporary file, and the run
// resumes from that checkpoint, once there is space, to the same weights as an uninterrupted run.
//
// The full disk is a small tmpfs (mount -t tmpfs -o size=...), and the read-only directory a read-only
// tmpfs: both need root (CAP_SYS_ADMIN). Without it the read-only case uses chmod and the full-disk case
// is skipped, saying so.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ember/ember.h>

#include "apps/run_dir.h"
#include "test_train_util.h"

using namespace ember;
using test::Result;
namespace fs = std::filesystem;

namespace {

// 30 steps per epoch, a checkpoint every 5 steps, none pruned: the disk fills up after a few.
const std::string kConfig =
    test::yaml({.workers = 1, .test_limit = 100, .normalize = false, .dropout = "",
                .optimizer = "{type: adam, lr: 0.002}", .scheduler = "",
                .output = "{checkpoint_every_steps: 5, keep_last: 100, log_every_steps: 10}"});

using test::train;

// A tmpfs mounted at `dir` for the scope (options as for mount -o); mounted() is false without permission.
class Tmpfs {
 public:
  Tmpfs(const fs::path& dir, const std::string& options) : dir_(dir) {
    fs::create_directories(dir);
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) == 0;
  }
  ~Tmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  bool remount(const std::string& options) {
    return ::mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, options.c_str()) == 0;
  }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

}  // namespace

TEST(Disk, OutputUnderAFileIsAUsageError) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  s.write("a_file", "x");
  const std::string out = (s.dir() / "a_file" / "run").string();
  const Result r = train("--config " + cfg + " --out " + out);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("the run directory " + out + " is not writable (cannot create it:"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("training on"), std::string::npos) << "it started training:\n" << r.output;
}

TEST(Disk, ReadOnlyOutputIsAUsageErrorBeforeTraining) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const fs::path ro = s.dir() / "ro";
  Tmpfs mount(ro, "size=64k");
  const bool read_only = mount.mounted() ? mount.remount("ro,size=64k") : false;
  if (!read_only) {
    if (::geteuid() == 0) GTEST_SKIP() << "root ignores permissions and cannot mount a read-only tmpfs here";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  }
  for (const fs::path& out : {ro, ro / "nested" / "run"}) {
    const Result r = train("--config " + cfg + " --out " + out.string());
    EXPECT_EQ(r.rc, 2) << r.output;
    EXPECT_NE(r.output.find("the run directory " + out.string() + " is not writable ("), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("choose another with --out"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("training on"), std::string::npos) << "it started training:\n" << r.output;
  }
  if (!read_only) fs::permissions(ro, fs::perms::owner_all);
}

TEST(Disk, FullDiskAtACheckpointKeepsThePreviousOneAndResumes) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const fs::path straight = s.dir() / "straight", small = s.dir() / "small";
  const Result reference = train("--config " + cfg + " --out " + straight.string());
  ASSERT_EQ(reference.rc, 0) << reference.output;
  const auto checkpoint_bytes = fs::file_size(straight / app::checkpoint_name(5));

  // Room for three checkpoints (and the small files) but not four: the write at step 20 fails.
  const uintmax_t room = 3 * checkpoint_bytes + checkpoint_bytes / 2;
  Tmpfs disk(small, "size=" + std::to_string(room));
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs (needs root): the full-disk case is not run";
  const fs::path run = small / "run";
  const Result full = train("--config " + cfg + " --out " + run.string());
  EXPECT_EQ(full.rc, 1) << full.output;
  test::expect_in(full.output, {"could not write the checkpoint of step 20", "No space left on device",
                                "the previous checkpoint " + (run / app::checkpoint_name(15)).string() + " is intact",
                                "continue with: ember-train --resume " + run.string()});
  const auto left = app::list_checkpoints(run);
  ASSERT_EQ(left.size(), 3u) << full.output;
  EXPECT_EQ(left.back().first, 15);
  for (const auto& [step, path] : left) EXPECT_NO_THROW((void)Checkpoint::load(path.string())) << path;
  test::expect_no_temporaries(run);

  // With space again the run resumes from step 15 and ends where the uninterrupted one did.
  ASSERT_TRUE(disk.remount("size=64m"));
  const Result resumed = train("--resume " + run.string());
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  EXPECT_NE(resumed.output.find(app::checkpoint_name(15) + " (epochs done: 0, step 15)"), std::string::npos) << resumed.output;
  test::expect_same_tensors(run / app::checkpoint_name(60), straight / app::checkpoint_name(60), "model.");
}
