// Datasets (TensorDataset, Subset, random_split, the default collation path) and transforms.
#include <numeric>
#include <set>

#include "data_test_util.h"

using namespace ember;
using namespace ember::testing;

namespace {

// N examples: input [2] = {i, -i} f32, target i.
std::shared_ptr<data::TensorDataset> numbered(int64_t n) {
  return indexed_dataset(n, {2}, [](int64_t i, int64_t k) { return static_cast<float>(k == 0 ? i : -i); });
}

// A dataset with only get(): exercises the default get_batch. Example 3 has the wrong shape.
struct GetOnly : data::Dataset {
  int64_t size() const override { return 5; }
  data::Example get(int64_t i) const override {
    data::check_index(i, size(), "GetOnly");
    return {full({i == 3 && bad ? 3 : 2}, static_cast<double>(i)), scalar_tensor(static_cast<double>(i), {.dtype = DType::i64})};
  }
  bool bad = false;
};

}  // namespace

TEST(TensorDataset, GetAndGetBatch) {
  auto ds = numbered(5);
  EXPECT_EQ(ds->size(), 5);
  EXPECT_EQ(ds->spec().input_shape, (Shape{2}));
  EXPECT_EQ(ds->spec().target_shape, (Shape{}));
  EXPECT_EQ(ds->get(3).input.to_vector<float>(), (std::vector<float>{3.0f, -3.0f}));
  Tensor in = empty({2, 2}), tg = empty({2}, {.dtype = DType::i64});
  ds->get_batch(std::vector<int64_t>{4, 1}, in, tg);
  EXPECT_EQ(in.to_vector<float>(), (std::vector<float>{4, -4, 1, -1}));
  EXPECT_EQ(tg.to_vector<int64_t>(), (std::vector<int64_t>{4, 1}));
  expect_error([&] { ds->get(5); }, {"TensorDataset::get", "index 5 is out of range", "valid: 0..4"});
  expect_error([&] { ds->get_batch(std::vector<int64_t>{-1, 0}, in, tg); }, {"index -1 is out of range"});
  Tensor wrong = empty({2, 3});
  expect_error([&] { ds->get_batch(std::vector<int64_t>{0, 1}, wrong, tg); }, {"input buffer", "[2, 2]", "got [2, 3]"});
}

TEST(TensorDataset, RejectsMismatchedTensors) {
  expect_error([] { data::TensorDataset(zeros({3, 2}), zeros({4})); }, {"dim 0: 3 vs 4"});
  expect_error([] { data::TensorDataset(scalar_tensor(1.0), zeros({1})); }, {"must have a dim 0"});
}

TEST(Dataset, DefaultGetBatchCopiesAndChecksShapes) {
  auto ds = std::make_shared<GetOnly>();
  Tensor in = empty({2, 2}), tg = empty({2}, {.dtype = DType::i64});
  ds->get_batch(std::vector<int64_t>{2, 4}, in, tg);
  EXPECT_EQ(in.to_vector<float>(), (std::vector<float>{2, 2, 4, 4}));
  EXPECT_EQ(tg.to_vector<int64_t>(), (std::vector<int64_t>{2, 4}));
  ds->bad = true;
  expect_error([&] { ds->get_batch(std::vector<int64_t>{3, 0}, in, tg); },
               {"example 3's input is [3] f32", "examples are [2] f32", "same shape"});
}

TEST(Subset, MapsIndices) {
  auto base = numbered(6);
  data::Subset sub(base, {5, 0, 2});
  EXPECT_EQ(sub.size(), 3);
  EXPECT_EQ(sub.get(0).target.item<int64_t>(), 5);
  Tensor in = empty({2, 2}), tg = empty({2}, {.dtype = DType::i64});
  sub.get_batch(std::vector<int64_t>{2, 1}, in, tg);
  EXPECT_EQ(tg.to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
  expect_error([&] { data::Subset(base, {6}); }, {"Subset", "index 6 is out of range"});
  expect_error([&] { sub.get(3); }, {"Subset::get", "index 3"});
}

TEST(RandomSplit, DisjointCoveringAndSeeded) {
  auto base = numbered(100);
  auto parts = data::random_split(base, {70, 20, 10}, 7);
  ASSERT_EQ(parts.size(), 3u);
  std::set<int64_t> seen;
  for (const auto& p : parts) seen.insert(p->indices().begin(), p->indices().end());
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(parts[1]->size(), 20);
  EXPECT_EQ(data::random_split(base, {70, 20, 10}, 7)[0]->indices(), parts[0]->indices());
  EXPECT_NE(data::random_split(base, {70, 20, 10}, 8)[0]->indices(), parts[0]->indices());
  std::vector<int64_t> identity(70);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(parts[0]->indices(), identity);  // shuffled
  expect_error([&] { data::random_split(base, {50, 40}, 0); }, {"add up to 90", "100 examples"});
  expect_error([&] { data::random_split(base, {110, -10}, 0); }, {"length -10 is negative"});
}

// --- transforms ------------------------------------------------------------------------------------------

namespace {

std::vector<float> apply(const data::Transform& t, const std::vector<float>& in, const Shape& shape, uint64_t index = 0) {
  data::ExampleRng rng(1234, index);
  std::vector<float> out(t.output_shape(shape).numel());
  t.apply(in.data(), shape, out.data(), rng);
  return out;
}

}  // namespace

TEST(Transforms, NormalizePerChannel) {
  data::Normalize n({1.0f, 2.0f}, {0.5f, 4.0f});
  EXPECT_EQ(apply(n, {1, 3, 2, 10}, {2, 1, 2}), (std::vector<float>{0, 4, 0, 2}));
  data::Normalize all({1.0f}, {2.0f});
  EXPECT_EQ(apply(all, {1, 3, 5}, {3}), (std::vector<float>{0, 1, 2}));
  expect_error([] { data::Normalize({0.f, 0.f}, {1.f}); }, {"mean has 2 values and std has 1"});
  expect_error([] { data::Normalize({0.f}, {0.f}); }, {"std 0 is not positive"});
  expect_error([&] { n.output_shape({3, 4, 4}); }, {"2 means/stds", "3 channels"});
}

TEST(Transforms, RandomCropIsAShiftedWindowWithFill) {
  // 1×4×4 image of values 1..16; crop 4×4 with padding 2: each output is the input shifted by
  // (dy, dx) in [-2, 2]², zeros where the shift uncovers padding.
  std::vector<float> img(16);
  std::iota(img.begin(), img.end(), 1.0f);
  data::RandomCrop crop(4, 2);
  std::set<std::pair<int, int>> shifts;
  for (uint64_t index = 0; index < 400; ++index) {
    const std::vector<float> out = apply(crop, img, {1, 4, 4}, index);
    int found = 0;
    for (int dy = -2; dy <= 2; ++dy)
      for (int dx = -2; dx <= 2; ++dx) {
        bool match = true;
        for (int y = 0; y < 4; ++y)
          for (int x = 0; x < 4; ++x) {
            const int sy = y + dy, sx = x + dx;
            const float want = sy >= 0 && sy < 4 && sx >= 0 && sx < 4 ? img[sy * 4 + sx] : 0.0f;
            match = match && out[y * 4 + x] == want;
          }
        if (match) shifts.insert({dy, dx}), ++found;
      }
    ASSERT_EQ(found, 1) << "example " << index << " is not a single shifted window";
  }
  EXPECT_EQ(shifts.size(), 25u);  // every offset occurs
  EXPECT_EQ(apply(crop, img, {1, 4, 4}, 17), apply(crop, img, {1, 4, 4}, 17));  // seeded per example
  // Smaller windows change the shape; no padding, same size is the identity.
  EXPECT_EQ(data::RandomCrop(2, 3, 0).output_shape({3, 5, 6}), (Shape{3, 2, 3}));
  EXPECT_EQ(apply(data::RandomCrop(4), img, {1, 4, 4}), img);
  expect_error([] { data::RandomCrop(9, 2).output_shape({1, 4, 4}); }, {"9x9 window does not fit", "padded by 2"});
  expect_error([] { data::RandomCrop(1).output_shape({4}); }, {"fewer than 2 dims"});
}

TEST(Transforms, RandomHorizontalFlip) {
  const std::vector<float> img = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(apply(data::RandomHorizontalFlip(1.0f), img, {1, 2, 3}), (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(apply(data::RandomHorizontalFlip(0.0f), img, {1, 2, 3}), img);
  int flipped = 0;
  for (uint64_t i = 0; i < 1000; ++i) flipped += apply(data::RandomHorizontalFlip(), img, {1, 2, 3}, i) != img;
  EXPECT_GT(flipped, 430);
  EXPECT_LT(flipped, 570);
  expect_error([] { data::RandomHorizontalFlip(1.5f); }, {"probability 1.5 is not in [0, 1]"});
}

TEST(Transforms, LambdaGetsACopyAndASeededGenerator) {
  data::Lambda twice([](const Tensor& x, Generator&) { return x * 2.0; });
  EXPECT_EQ(apply(twice, {1, 2}, {2}), (std::vector<float>{2, 4}));
  data::Lambda noise([](const Tensor& x, Generator& gen) { return x + rand(x.shape(), {}, &gen); });
  EXPECT_EQ(apply(noise, {0, 0}, {2}, 5), apply(noise, {0, 0}, {2}, 5));
  EXPECT_NE(apply(noise, {0, 0}, {2}, 5), apply(noise, {0, 0}, {2}, 6));
  data::Lambda bad([](const Tensor& x, Generator&) { return x.sum(); }, "summer");
  expect_error([&] { apply(bad, {1, 2}, {2}); }, {"Lambda 'summer'", "returned [] f32", "same shape"});
}
