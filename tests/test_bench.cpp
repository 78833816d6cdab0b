// ember-bench end to end, as a subprocess: the JSON report parses and has every field; --steps, --warmup
// and --batch-size are respected; the run is seeded (two runs report the same losses) and needs no
// Fashion-MNIST files (an idx dataset's shape is read from its files);
// --device cuda on a machine or build without a usable CUDA fails with exit 2 and Device::parse's reason,
// and `both` measures the CPU and says why CUDA was skipped; bad configs and arguments exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

#include <ember/ember.h>

#include "apps/bench.h"
#include "apps/config.h"
#include "backends/cpu/cpu_backend.h"
#include "test_helpers.h"
#include "test_train_util.h"

using namespace ember;
using nlohmann::json;
using test::Result;

namespace {

// data.dir points nowhere: ember-bench must not read the dataset. Dropout and a per-step cosine schedule
// make the seeded-run check non-trivial.
const std::string kConfig = test::yaml({.data_dir = "/nonexistent/fashion-mnist", .batch_size = 32,
                                        .workers = std::nullopt, .limit = std::nullopt, .test_limit = std::nullopt});

// Runs ember-bench; `output` is its stdout only (the logs on stderr go to `err`).
Result bench(const test::Scratch& s, const std::string& args) {
  const std::string err = (s.dir() / "stderr.txt").string();
  std::string command = EMBER_BENCH_APP;  // in steps: one long + chain draws a false GCC 12 -Wrestrict warning
  command += " " + args + " 2>" + err;
  Result r = test::run("(" + command + ")");
  r.output += test::read_text(err);  // after stdout, so that a JSON report is the output's prefix
  return r;
}

// The JSON object on stdout (the output up to its closing brace).
json report(const Result& r) {
  const size_t end = r.output.find("\n}\n");
  EXPECT_NE(end, std::string::npos) << r.output;
  return json::parse(r.output.substr(0, end + 2));
}

// The report of a two-step CPU run of the config file `cfg` (no warmup), which must succeed.
json two_cpu_steps(const test::Scratch& s, const std::string& cfg) {
  const Result r = bench(s, "--config " + cfg + " --device cpu --steps 2 --warmup 0 --json");
  EXPECT_EQ(r.rc, 0) << r.output;
  return report(r);
}

// Device::parse's reason for refusing "cuda", or empty when this machine and build can use it.
std::string cuda_refusal() {
  try {
    Device::parse("cuda");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

TEST(Bench, JsonReportHasEveryFieldAndRespectsTheArguments) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const Result r = bench(s, "--config " + cfg + " --device cpu --steps 7 --warmup 3 --batch-size 16 --json");
  ASSERT_EQ(r.rc, 0) << r.output;
  const json j = report(r);
  EXPECT_EQ(j.at("steps"), 7);
  EXPECT_EQ(j.at("warmup"), 3);
  EXPECT_EQ(j.at("batch_size"), 16);
  EXPECT_EQ(j.at("seed"), 3);
  EXPECT_EQ(j.at("classes"), 10);
  EXPECT_EQ(j.at("sample_shape"), json::parse("[1, 28, 28]"));
  EXPECT_FALSE(j.contains("comparison"));  // one device
  ASSERT_EQ(j.at("devices").size(), 1u);
  const json& cpu = j.at("devices")[0];
  EXPECT_EQ(cpu.at("device"), "cpu");
  EXPECT_EQ(cpu.at("status"), "ok");
  EXPECT_EQ(cpu.at("steps_run"), 10);  // warmup + steps
  EXPECT_NE(cpu.at("description").get<std::string>().find("threads"), std::string::npos) << cpu;
  const json& ms = cpu.at("ms_per_step");
  EXPECT_GT(ms.at("min").get<double>(), 0);
  EXPECT_LE(ms.at("min").get<double>(), ms.at("median").get<double>());
  EXPECT_LE(ms.at("median").get<double>(), ms.at("max").get<double>());
  // samples/s is batch × steps over the summed step times: between the rates of the slowest and fastest step
  const double rate = cpu.at("samples_per_sec").get<double>();
  EXPECT_GE(rate, 16 / (ms.at("max").get<double>() / 1000) * 0.999);
  EXPECT_LE(rate, 16 / (ms.at("min").get<double>() / 1000) * 1.001);
  EXPECT_EQ(cpu.at("peak_memory_kind"), "rss");
  EXPECT_GT(cpu.at("peak_memory_mib").get<double>(), 1);
  EXPECT_GT(cpu.at("allocator_peak_mib").get<double>(), 0);
  const double loss = cpu.at("final_loss").get<double>();
  EXPECT_TRUE(std::isfinite(loss) && loss > 0 && loss < 10) << loss;  // ~ln 10 on random labels
}

TEST(Bench, SeededRunsReportTheSameLossAndStepsChangeIt) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const std::string args = "--config " + cfg + " --device cpu --warmup 2 --json";
  const Result a = bench(s, args + " --steps 5"), b = bench(s, args + " --steps 5"), c = bench(s, args + " --steps 6");
  ASSERT_EQ(a.rc, 0) << a.output;
  ASSERT_EQ(b.rc, 0) << b.output;
  ASSERT_EQ(c.rc, 0) << c.output;
  const auto loss = [](const Result& r) { return report(r).at("devices")[0].at("final_loss").get<double>(); };
  EXPECT_EQ(loss(a), loss(b));
  EXPECT_NE(loss(a), loss(c));  // one more step trained
  EXPECT_EQ(report(c).at("devices")[0].at("steps_run"), 8);
}

// Writes an unsigned-byte IDX file with `dims` (values i % 251).
std::string write_idx(const test::Scratch& s, const std::string& name, const std::vector<uint32_t>& dims) {
  std::string bytes{'\0', '\0', '\x08', static_cast<char>(dims.size())};
  size_t count = 1;
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) bytes.push_back(static_cast<char>((d >> shift) & 0xff));
    count *= d;
  }
  for (size_t i = 0; i < count; ++i) bytes.push_back(static_cast<char>(i % 251 % 3));  // labels 0..2 as well
  return s.write(name, bytes);
}

// An idx dataset's example shape comes from its files (6 × 5 images here), the number of classes from the
// model's output.
TEST(Bench, IdxDatasetShapeComesFromItsFiles) {
  test::Scratch s;
  const std::string images = write_idx(s, "images", {10, 6, 5}), labels = write_idx(s, "labels", {10});
  const std::string cfg = s.write("cfg.yaml", "epochs: 1\ndata: {dataset: idx, train_images: " + images +
      ", train_labels: " + labels + ", test_images: " + images + ", test_labels: " + labels +
      ", batch_size: 4}\n"
      "model: [{type: flatten}, {type: linear, out_features: 3}]\noptimizer: {type: sgd, lr: 0.1}\n");
  const json j = two_cpu_steps(s, cfg);
  EXPECT_EQ(j.at("sample_shape"), json::parse("[1, 6, 5]"));
  EXPECT_EQ(j.at("classes"), 3);
  EXPECT_EQ(j.at("devices")[0].at("steps_run"), 2);
}

// Text data: synthetic token ids in [0, V) and next-token targets (V from the corpus's char vocabulary,
// here 4: "\n", a, b, c); the loss on random tokens stays near ln V.
TEST(Bench, LanguageModelOnTokenIds) {
  test::Scratch s;
  std::string text;
  for (int i = 0; i < 400; ++i) text += (i % 7 == 6) ? "\n" : std::string(1, static_cast<char>('a' + i % 3));
  const std::string corpus = s.write("corpus.txt", text);
  const std::string cfg = s.write("cfg.yaml", "epochs: 1\ntask: language_model\ndata: {path: " + corpus +
      ", context: 8, batch_size: 4}\nmodel: [{type: embedding, embedding_dim: 8}, {type: linear, out_features: 4}]\n"
      "optimizer: {type: sgd, lr: 0.1}\n");
  const json j = two_cpu_steps(s, cfg);
  EXPECT_EQ(j.at("sample_shape"), json::parse("[8]"));
  EXPECT_EQ(j.at("classes"), 4);
  const double loss = j.at("devices")[0].at("final_loss").get<double>();
  EXPECT_NEAR(loss, std::log(4.0), 0.5);
}

TEST(Bench, TableNamesTheColumnsAndTheDevice) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const Result r = bench(s, "--config " + cfg + " --device cpu --steps 3 --warmup 1");
  ASSERT_EQ(r.rc, 0) << r.output;
  for (const char* piece : {"batch 32, 3 timed steps after 1 warmup", "samples/s", "ms/step med", "peak memory",
                            "final loss", "MiB (rss)", "\ncpu "})
    EXPECT_NE(r.output.find(piece), std::string::npos) << piece << " missing in\n" << r.output;
}

TEST(Bench, CudaIsRefusedWithTheReasonAndBothSkipsIt) {
  const std::string refusal = cuda_refusal();
  if (refusal.empty()) GTEST_SKIP() << "CUDA is usable here: the refusal cannot be tested";
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const Result cuda = bench(s, "--config " + cfg + " --device cuda --steps 3 --json");
  EXPECT_EQ(cuda.rc, 2) << cuda.output;
  EXPECT_NE(cuda.output.find(refusal), std::string::npos) << refusal << " missing in\n" << cuda.output;
  EXPECT_EQ(cuda.output.find("samples_per_sec"), std::string::npos) << "a number for a device that cannot run";

  const Result both = bench(s, "--config " + cfg + " --device both --steps 3 --warmup 1 --json");
  ASSERT_EQ(both.rc, 0) << both.output;
  const json j = report(both);
  ASSERT_EQ(j.at("devices").size(), 2u) << j;
  EXPECT_EQ(j.at("devices")[0].at("device"), "cpu");
  EXPECT_EQ(j.at("devices")[0].at("status"), "ok");
  EXPECT_EQ(j.at("devices")[0].at("steps_run"), 4);
  EXPECT_EQ(j.at("devices")[1].at("device"), "cuda");
  EXPECT_EQ(j.at("devices")[1].at("status"), "skipped");
  EXPECT_EQ(j.at("devices")[1].at("reason"), refusal);
  EXPECT_FALSE(j.at("devices")[1].contains("samples_per_sec"));
  EXPECT_FALSE(j.contains("comparison"));

  const Result table = bench(s, "--config " + cfg + " --device both --steps 2 --warmup 0");
  ASSERT_EQ(table.rc, 0) << table.output;
  EXPECT_NE(table.output.find("cuda     skipped: " + refusal), std::string::npos) << table.output;
}

TEST(Bench, BadConfigsAndArgumentsExitTwo) {
  test::Scratch s;
  const std::string good = s.write("good.yaml", kConfig);
  std::string typo = kConfig;
  typo.replace(typo.find("batch_size"), 10, "batch_sise");
  const std::string bad = s.write("bad.yaml", typo);
  std::string conv = kConfig;  // a 2-D convolution after flatten: the specs do not connect
  conv.replace(conv.find("- {type: relu}"), 14, "- {type: conv2d, out_channels: 4, kernel_size: 3}");
  const std::string misfit = s.write("misfit.yaml", conv);
  struct Case {
    std::string args, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"--config " + bad + " --device cpu", "did you mean 'batch_size'"},
           {"--config " + s.dir().string() + "/missing.yaml", "missing.yaml"},
           {"--config " + misfit + " --device cpu", "conv2d"},
           {"--config " + good + " --device cpu --set optimizer.lr=-1", "optimizer.lr"},
           {"--config " + good + " --device tpu", "--device tpu"},
           {"--config " + good + " --steps 0", "--steps"},
           {"--config " + good + " --warmup -1", "--warmup"},
           {"--device cpu", "--config"},
       }) {
    const Result r = bench(s, c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.expected << " missing in\n" << r.output;
  }
}

// A device given in the YAML (or by --set) that cannot be served is reported as that key, with its file and
// line, not as a --device the user never typed.
TEST(Bench, DeviceFromTheConfigIsNamedAsItsKey) {
  test::Scratch s;
  const std::string cfg = s.write("dev.yaml", kConfig + "device: cuda:63\n");
  const Result r = bench(s, "--config " + cfg + " --steps 1 --warmup 0");
  EXPECT_EQ(r.rc, 2) << r.output;
  test::expect_in(r.output, {"dev.yaml:", ": device: device 'cuda:63' requested", "device: cpu works on every machine"});
  EXPECT_EQ(r.output.find("--device"), std::string::npos) << r.output;
  const Result set = bench(s, "--config " + s.write("plain.yaml", kConfig) + " --set device=cuda:63 --steps 1");
  EXPECT_EQ(set.rc, 2) << set.output;
  test::expect_in(set.output, {"--set device=cuda:63: device: device 'cuda:63' requested"});
  EXPECT_EQ(set.output.find("--device"), std::string::npos) << set.output;
  // --device still speaks of --device
  const Result flag = bench(s, "--config " + cfg + " --device cuda:63 --steps 1");
  EXPECT_EQ(flag.rc, 2) << flag.output;
  test::expect_in(flag.output, {"--device cuda:63: device 'cuda:63' requested", "--device cpu works"});
}

// --find-max-batch's search, on a CPU backend with 24 MiB of memory standing in for a GPU: the batch size it
// reports trains, one more runs out of memory, and the error it keeps is the allocator's.
namespace {
struct CappedMemory {
  static constexpr size_t kCapacity = size_t{24} << 20;
  static inline std::map<void*, size_t> blocks;
  static inline size_t live = 0;
  static void* allocate(size_t bytes) {
    if (bytes > kCapacity - live) return nullptr;
    void* p = std::aligned_alloc(64, bytes);
    blocks[p] = bytes;
    live += bytes;
    return p;
  }
  static void deallocate(void* p) {
    live -= blocks.at(p);
    blocks.erase(p);
    std::free(p);
  }
};
}  // namespace

TEST(Bench, FindMaxBatchFindsTheBoundaryOnACappedDevice) {
  const test::Scratch s;
  const app::TrainConfig cfg = app::load_config(s.write("cfg.yaml", kConfig), {}, /*fashion_files=*/false);
  cpu::CpuBackend standin({CappedMemory::allocate, CappedMemory::deallocate, "cuda:0", CappedMemory::kCapacity});
  set_backend_override(DeviceType::CUDA, &standin);
  const Device gpu(DeviceType::CUDA, 0);
  const app::MaxBatchResult r = app::find_max_batch(cfg, gpu, 1 << 16, 2);
  EXPECT_GT(r.batch_size, 32);  // the config's 32 fits many times over in 24 MiB
  EXPECT_EQ(r.failed_batch_size, r.batch_size + 1);
  EXPECT_NE(r.failure.find("cuda:0: out of memory"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("device total 24.00 MiB"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("lower the batch size"), std::string::npos) << r.failure;
  EXPECT_GT(r.peak_mib, 0);
  EXPECT_LE(r.peak_mib, 24);
  EXPECT_EQ(CappedMemory::live, 0u);  // every trial gave its memory back
  // The boundary is real: the reported size trains, one more does not.
  app::TrainConfig c = cfg;
  c.data.batch_size = r.batch_size;
  EXPECT_NO_THROW(app::run_bench(c, gpu, {.steps = 2, .warmup = 0}));
  standin.empty_cache(0);
  c.data.batch_size = r.batch_size + 1;
  EXPECT_TRUE(test::throws_error([&] { app::run_bench(c, gpu, {.steps = 2, .warmup = 0}); }, {"out of memory"}));
  set_backend_override(DeviceType::CUDA, nullptr);
}

TEST(Bench, FindMaxBatchRefusesTheCpu) {
  const test::Scratch s;
  const Result r = bench(s, "--config " + s.write("cfg.yaml", kConfig) + " --device cpu --find-max-batch");
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("--find-max-batch needs a CUDA device"), std::string::npos) << r.output;
}
