// TensorBoard event files (observe/): CRC-32C against RFC 3720's vectors and TensorBoard's own masked CRC,
// record framing byte for byte against TensorBoard's, histograms against PyTorch's make_histogram
// (tests/data/tensorboard_golden.json, made by tools/make_tensorboard_golden.py), and the files read back by
// TensorBoard's own reader (tools/read_tensorboard.py in .venv-test): scalars, histograms and text, a
// purge_step, and ember-train's scalars compared with metrics.jsonl and steps.jsonl after a resume.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <ember/ember.h>

#include "apps/run_dir.h"
#include "observe/crc32c.h"
#include "observe/record_writer.h"
#include "python_checks.h"
#include "test_train_util.h"

using namespace ember;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const json& golden() {
  static const json g = json::parse(test::read_text(EMBER_TEST_DATA_DIR "/tensorboard_golden.json"));
  return g;
}

// The JSON tools/read_tensorboard.py prints for `dir`; a failure of the script fails the test.
json read_tensorboard(const fs::path& dir) {
  const std::string py = test::checker_python();
  if (py.empty()) return {};
  const test::Result r = test::run(py + " " + EMBER_SOURCE_DIR "/tools/read_tensorboard.py " + test::quoted(dir.string()));
  EXPECT_EQ(r.rc, 0) << r.output;
  if (r.rc != 0) return {};
  const std::vector<std::string> lines = test::lines(r.output);  // the JSON is the last line (warnings before)
  return json::parse(lines.back());
}

// A number of the reader's JSON: a number, or "NaN"/"Infinity"/"-Infinity".
double number(const json& v) { return v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>(); }

// Expects TensorBoard's float32 `got` to be `expected` stored as float32 (NaN equal to NaN).
void expect_float32(double got, double expected, const std::string& what) {
  const float e = static_cast<float>(expected);
  if (std::isnan(e)) EXPECT_TRUE(std::isnan(got)) << what << ": " << got;
  else EXPECT_EQ(static_cast<float>(got), e) << what;
}

}  // namespace

TEST(Crc32c, Rfc3720Vectors) {
  // RFC 3720 appendix B.4, and the check value of the CRC catalogue.
  const std::string zeros(32, '\0'), ones(32, '\xff');
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(observe::crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(observe::crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(observe::crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(observe::crc32c("123456789"), 0xE3069283u);
  // TensorBoard's own masked CRC of the same bytes.
  const json& masked = golden()["masked_crc32c"];
  EXPECT_EQ(observe::mask_crc(observe::crc32c(zeros)), masked["zeros32"].get<uint32_t>());
  EXPECT_EQ(observe::mask_crc(observe::crc32c(ones)), masked["ones32"].get<uint32_t>());
  EXPECT_EQ(observe::mask_crc(observe::crc32c(ascending)), masked["ascending32"].get<uint32_t>());
  EXPECT_EQ(observe::mask_crc(observe::crc32c("123456789")), masked["123456789"].get<uint32_t>());
}

TEST(TfRecord, FramingEqualsTensorBoards) {
  const std::string framed = observe::frame_record(golden()["record_payload"].get<std::string>());
  std::string hex;
  for (const unsigned char c : framed) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", c);
    hex += b;
  }
  EXPECT_EQ(hex, golden()["record_hex"].get<std::string>());
}

TEST(Histogram, EqualsPyTorchsMakeHistogram) {
  EXPECT_EQ(default_histogram_edges().size(), golden()["default_bins"].get<size_t>());
  for (const auto& [name, values] : golden()["inputs"].items()) {
    SCOPED_TRACE(name);
    const Histogram h = make_histogram(values.get<std::vector<double>>());
    const json& want = golden()["histograms"][name];
    EXPECT_EQ(h.min, want["min"].get<double>());
    EXPECT_EQ(h.max, want["max"].get<double>());
    EXPECT_EQ(h.num, want["num"].get<double>());
    EXPECT_NEAR(h.sum, want["sum"].get<double>(), 1e-9 * std::max(1.0, std::fabs(h.sum)));
    EXPECT_NEAR(h.sum_squares, want["sum_squares"].get<double>(), 1e-12 * h.sum_squares);
    EXPECT_EQ(h.bucket_limit, want["bucket_limit"].get<std::vector<double>>());  // the same doubles
    EXPECT_EQ(h.bucket, want["bucket"].get<std::vector<double>>());
  }
  // A tensor goes through the same path (f32 values read as f64).
  const std::vector<double> normal = golden()["inputs"]["normal_f32"].get<std::vector<double>>();
  std::vector<float> f32(normal.begin(), normal.end());
  const Histogram t = make_histogram(from_vector(f32, {static_cast<int64_t>(f32.size())}));
  EXPECT_EQ(t.bucket, golden()["histograms"]["normal_f32"]["bucket"].get<std::vector<double>>());
}

TEST(Histogram, RefusesEmptyAndOutOfRangeValues) {
  try {
    make_histogram(std::vector<double>{});
    ADD_FAILURE() << "no error for an empty tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no element"), std::string::npos) << e.what();
  }
  try {
    make_histogram(std::vector<double>{std::nan(""), 1e30});
    ADD_FAILURE() << "no error for values outside the edges";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none of the 2 values"), std::string::npos) << e.what();
  }
}

TEST(SummaryWriter, NamesItsFileAndRefusesAnUnwritableDirectory) {
  test::Scratch s;
  {
    SummaryWriter a(s.dir().string()), b(s.dir().string());
    const std::string name = fs::path(a.path()).filename().string();
    EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
    char pid[32];
    std::snprintf(pid, sizeof pid, ".%d.", static_cast<int>(::getpid()));
    EXPECT_NE(name.find(pid), std::string::npos) << name;
    EXPECT_LT(name, fs::path(b.path()).filename().string());  // a later writer's file sorts after: read later
  }
  s.write("file", "x");
  try {
    SummaryWriter bad((s.dir() / "file" / "sub").string());
    ADD_FAILURE() << "no error for a log dir under a file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the log directory"), std::string::npos) << e.what();
  }
}

// Scalars (with a NaN), a histogram and text, written by two writers (the second one purging from step 3,
// as a resumed run does), read back by TensorBoard's reader.
TEST(SummaryWriter, TensorBoardsReaderReadsScalarsHistogramsTextAndPurges) {
  test::Scratch s;
  const std::vector<double> normal = golden()["inputs"]["normal_f32"].get<std::vector<double>>();
  const std::vector<float> values(normal.begin(), normal.end());
  {
    SummaryWriter tb(s.dir().string());
    for (int64_t step = 1; step <= 5; ++step) tb.add_scalar("loss", 1.0 / static_cast<double>(step), step);
    tb.add_scalar("odd", std::nan(""), 2);
    tb.add_histogram("weights", from_vector(values, {20, 10}), 2);
    tb.add_text("notes", "first run: **bold**, ünïcode", 1);
  }
  {
    SummaryWriter tb(s.dir().string(), {.purge_step = 3, .filename_suffix = ""});
    for (int64_t step = 3; step <= 4; ++step) tb.add_scalar("loss", 10.0 * static_cast<double>(step), step);
  }
  const json got = read_tensorboard(s.dir());
  if (got.is_null()) return;
  EXPECT_EQ(got["files"], 2);
  const json& loss = got["scalars"]["loss"];
  ASSERT_EQ(loss.size(), 4u) << loss;  // 1, 2 from the first writer; 3, 4 from the second (its 3..5 purged)
  const std::vector<std::pair<int64_t, double>> want = {{1, 1.0}, {2, 0.5}, {3, 30.0}, {4, 40.0}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(loss[i][0].get<int64_t>(), want[i].first);
    expect_float32(number(loss[i][1]), want[i].second, "loss at step " + std::to_string(want[i].first));
  }
  ASSERT_EQ(got["scalars"]["odd"].size(), 1u);
  EXPECT_TRUE(std::isnan(number(got["scalars"]["odd"][0][1])));
  ASSERT_EQ(got["histograms"]["weights"].size(), 1u);
  const json& h = got["histograms"]["weights"][0];
  const json& want_h = golden()["histograms"]["normal_f32"];
  EXPECT_EQ(h["step"], 2);
  EXPECT_EQ(h["bucket_limit"].get<std::vector<double>>(), want_h["bucket_limit"].get<std::vector<double>>());
  EXPECT_EQ(h["bucket"].get<std::vector<double>>(), want_h["bucket"].get<std::vector<double>>());
  EXPECT_EQ(number(h["min"]), want_h["min"].get<double>());
  EXPECT_EQ(number(h["num"]), 200);
  ASSERT_EQ(got["texts"]["notes"].size(), 1u);
  EXPECT_EQ(got["texts"]["notes"][0][0], 1);
  EXPECT_EQ(got["texts"]["notes"][0][1], "first run: **bold**, ünïcode");
}

// ember-train's event files hold exactly the scalars of steps.jsonl ("train/<key>") and metrics.jsonl
// ("epoch/<key>") at their steps — after a resume from a mid-epoch checkpoint and one from an epoch's last
// step (taken before that epoch's evaluation), with the old files' later records still in the directory:
// no duplicate, no missing step. Histograms appear at their steps.
TEST(TrainTensorBoard, ScalarsEqualTheMetricsFilesAcrossResumes) {
  test::Scratch s;
  // 300 examples in batches of 50: 6 steps per epoch, 3 epochs.
  const std::string cfg = s.write(
      "cfg.yaml", test::yaml({.epochs = 3, .seed = 5, .batch_size = 50, .workers = 1, .limit = 300, .test_limit = 100,
                              .hidden = 16,
                              .output = "{checkpoint_every_steps: 4, keep_last: 100, log_every_steps: 2, "
                                        "histograms_every_steps: 6}"}));
  const fs::path run = s.dir() / "run";
  ASSERT_EQ(test::train("--config " + cfg + " --out " + run.string()).rc, 0);
  // Died after step 14 (mid epoch 3, the checkpoint of step 12 the newest), then after step 12 (the last
  // step of epoch 2, checkpointed before its evaluation): each resume leaves its own events file.
  for (const int64_t died_after : {14, 12}) {
    for (const auto& e : fs::directory_iterator(run)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("checkpoint-", 0) == 0 && name > app::checkpoint_name(died_after)) fs::remove(e.path());
    }
    const test::Result r = test::train("--resume " + run.string());
    ASSERT_EQ(r.rc, 0) << r.output;
  }
  const json got = read_tensorboard(run);
  if (got.is_null()) return;
  EXPECT_EQ(got["files"], 3);
  std::map<std::string, std::vector<std::pair<int64_t, double>>> want;
  for (const auto& [file, prefix] : {std::pair{"steps.jsonl", "train/"}, std::pair{"metrics.jsonl", "epoch/"}})
    for (const std::string& line : test::lines(test::read_text(run / file))) {
      const json row = json::parse(line);
      for (const auto& [key, value] : row.items())
        if (key != "epoch" && key != "step" && !value.is_null())
          want[prefix + key].emplace_back(row["step"].get<int64_t>(), number(value));
    }
  ASSERT_EQ(want["train/loss"].size(), 9u);  // steps 2, 4, ..., 18
  ASSERT_EQ(want["epoch/test_accuracy"].size(), 3u);
  for (const auto& [tag, points] : want) {
    SCOPED_TRACE(tag);
    ASSERT_TRUE(got["scalars"].contains(tag)) << got["scalars"].dump().substr(0, 400);
    const json& tb = got["scalars"][tag];
    ASSERT_EQ(tb.size(), points.size()) << tb;
    for (size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(tb[i][0].get<int64_t>(), points[i].first);
      expect_float32(number(tb[i][1]), points[i].second, "step " + std::to_string(points[i].first));
    }
  }
  EXPECT_EQ(got["scalars"].size(), want.size()) << "TensorBoard holds scalars the metrics files do not";
  // Histograms every 6 steps: weights at 6, 12 (rewritten by the resume from 12) and 18; gradients at 6 and
  // 18 (the checkpoint holds no gradients, so the resume from step 12 cannot rewrite those of step 12).
  const std::vector<int64_t> weight_steps = {6, 12, 18}, grad_steps = {6, 18};
  for (const auto& [tag, steps] : {std::pair{"weights/1.weight", weight_steps}, std::pair{"grads/1.weight", grad_steps}}) {
    ASSERT_TRUE(got["histograms"].contains(tag)) << got["histograms"].dump().substr(0, 300);
    std::vector<int64_t> at;
    for (const json& h : got["histograms"][tag]) at.push_back(h["step"].get<int64_t>());
    EXPECT_EQ(at, steps) << tag;
  }
}

// output.tensorboard: false writes no event files (steps.jsonl and the report stay).
TEST(TrainTensorBoard, OffWritesNoEventFiles) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", test::yaml({.epochs = 1, .batch_size = 50, .workers = 1, .limit = 100,
                                                          .test_limit = 50, .hidden = 8}));
  const fs::path run = s.dir() / "run";
  ASSERT_EQ(test::train("--config " + cfg + " --out " + run.string() + " --set output.tensorboard=false").rc, 0);
  for (const auto& e : fs::directory_iterator(run))
    EXPECT_EQ(e.path().filename().string().rfind("events.out.tfevents.", 0), std::string::npos) << e.path();
  EXPECT_TRUE(fs::exists(run / "steps.jsonl"));
  EXPECT_TRUE(fs::exists(run / "report.html"));
}
