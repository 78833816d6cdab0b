#include <gtest/gtest.h>

#include <ember/ember.h>

using namespace ember;

TEST(Tensor, Smoke) {
  Tensor a = arange(6).reshape({2, 3});
  EXPECT_EQ(a.sum().item<float>(), 15.f);
}
