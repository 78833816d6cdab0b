// The shipped configs reach their accuracies (label `long`: minutes on a CPU, not in the default CI run):
// configs/fashion_mlp.yaml >= 88% and configs/fashion_cnn.yaml >= 91.5% test accuracy after their epochs.
#include <gtest/gtest.h>

#include "test_train_util.h"

namespace {

double final_test_accuracy(const std::string& config) {
  ember::test::Scratch s;
  const std::string run = (s.dir() / "run").string();
  const ember::test::Result r = ember::test::run(std::string(EMBER_TRAIN_APP) + " --config " EMBER_TEST_DATA_DIR
                                                 "/../../configs/" + config + " --device cpu --out " + run);
  EXPECT_EQ(r.rc, 0) << r.output;
  const auto rows = ember::test::metrics_rows(s.dir() / "run");
  if (rows.empty()) return 0;
  std::printf("%s: %s\n", config.c_str(), rows.back().dump().c_str());
  return ember::test::metric(rows.back(), "test_accuracy");
}

}  // namespace

TEST(ShippedConfigs, MlpReaches88Percent) { EXPECT_GE(final_test_accuracy("fashion_mlp.yaml"), 0.88); }

TEST(ShippedConfigs, CnnReaches91Point5Percent) { EXPECT_GE(final_test_accuracy("fashion_cnn.yaml"), 0.915); }
