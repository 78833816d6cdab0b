// ember-train's tasks end to end, as subprocesses on data written by the tests: a language model on a small
// text file (the embedding + linear bigram model must come close to the corpus's bigram baseline), its exact
// resume mid-epoch, gradient accumulation against one large batch, regression on a CSV table, and ember-eval
// on each.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include <ember/ember.h>

#include "apps/run_dir.h"
#include "test_train_util.h"

using namespace ember;
using test::Result;
using test::train;

namespace {

namespace fs = std::filesystem;

// About 24 kB of words drawn from a fixed little grammar (an LCG, so the text is the same everywhere):
// enough structure that a bigram model learns it, with 19 distinct characters.
std::string make_corpus(uint32_t seed = 7, size_t words = 5000) {
  static const char* const kWords[] = {"the", "cat", "sat", "on", "a", "mat", "dog", "ran", "to", "big",
                                       "red", "house", "and", "then", "slept"};
  uint32_t state = seed;
  std::string text;
  for (size_t i = 0; i < words; ++i) {
    state = state * 1664525u + 1013904223u;
    text += kWords[(state >> 16) % 15];
    text += (i % 12 == 11) ? "\n" : " ";
  }
  return text;
}

int64_t vocab_of(const std::string& text) { return data::Tokenizer::chars(text).vocab_size(); }

// A language-model config over `corpus`; `model` is the YAML list of layers, `optimizer` its section.
std::string lm_config(const std::string& corpus, const std::string& model, const std::string& extra = "",
                      const std::string& optimizer = "{type: adamw, lr: 0.02, weight_decay: 0.01, "
                                                     "no_decay: [bias, embedding]}") {
  return "task: language_model\nepochs: 3\nseed: 5\n"
         "data: {path: " + corpus + ", context: 16, batch_size: 32, test_batch_size: 64, workers: 0}\n"
         "model: " + model + "\noptimizer: " + optimizer + "\n" + extra;
}

std::string bigram_model(int64_t vocab, bool dropout = false) {
  return "[{type: embedding, embedding_dim: 32}, " + std::string(dropout ? "{type: dropout, p: 0.1}, " : "") +
         "{type: linear, out_features: " + std::to_string(vocab) + "}]";
}

std::vector<nlohmann::json> json_lines(const fs::path& file) {
  std::vector<nlohmann::json> out;
  for (const std::string& line : test::lines(test::read_text(file))) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::vector<float> floats(const test::TensorBytes& t) {
  std::vector<float> v(t.bytes.size() / sizeof(float));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(float));
  return v;
}

// Copies the run `from` to `to` as if the process had died after step `step` (later checkpoints gone).
void cut_after(const fs::path& from, const fs::path& to, int64_t step) {
  fs::copy(from, to);
  for (const auto& e : fs::directory_iterator(to)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint-", 0) == 0 && name > app::checkpoint_name(step)) fs::remove(e.path());
  }
}

// CIFAR-10's binary files in `bin` (cifar-10-batches-bin): data_batch_1..5.bin and test_batch.bin, 4 records each.
void write_cifar10(const fs::path& bin) {
  fs::create_directories(bin);
  const auto records = [](int n, int seed) {
    std::vector<char> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(static_cast<char>((i + seed) % 10));
      for (int k = 0; k < 3072; ++k) out.push_back(static_cast<char>((k * (i + 1) + seed) % 256));
    }
    return out;
  };
  for (int f = 1; f <= 6; ++f) {
    const auto bytes = records(4, f);
    std::ofstream(bin / (f <= 5 ? "data_batch_" + std::to_string(f) + ".bin" : std::string("test_batch.bin")),
                  std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
}

}  // namespace

// The embedding + linear model is a bigram model: trained, its validation loss must come close to the
// add-one-smoothed bigram cross entropy of the same split (it cannot beat that by much, and must approach it).
TEST(TrainTasks, LanguageModelApproachesTheBigramBaseline) {
  test::Scratch s;
  const std::string text = make_corpus();
  const std::string corpus = s.write("corpus.txt", text);
  const int64_t vocab = vocab_of(text);
  const std::string cfg = s.write("lm.yaml", lm_config(corpus, bigram_model(vocab)));
  const fs::path run = s.dir() / "run";
  const Result r = train("--config " + cfg + " --out " + run.string());
  ASSERT_EQ(r.rc, 0) << r.output;
  test::expect_in(r.output, {"epoch 3/3: train loss", "next-token accuracy", "nats/token", "bits/char", "perplexity"});

  const data::Tokenizer tok = data::Tokenizer::chars(text);
  const std::vector<int64_t> ids = tok.encode(text);
  const auto train_end = static_cast<int64_t>(std::llround(0.9 * static_cast<double>(ids.size())));
  const double bigram = data::bigram_cross_entropy(ids, train_end, vocab);

  const auto rows = test::metrics_rows(run);
  ASSERT_EQ(rows.size(), 3u);
  const double val = test::metric(rows.back(), "test_loss");
  EXPECT_LT(val, bigram + 0.03) << "the bigram model did not reach the bigram baseline " << bigram;
  EXPECT_GT(val, bigram - 0.05) << "a bigram model cannot beat the bigram baseline " << bigram << " by much";
  EXPECT_LT(val, test::metric(rows.front(), "test_loss") + 1e-9);
  EXPECT_NEAR(test::metric(rows.back(), "test_bits_per_char"), val / std::log(2.0), 1e-12);
  EXPECT_NEAR(test::metric(rows.back(), "test_perplexity"), std::exp(val), 1e-9);
  const double acc = test::metric(rows.back(), "test_accuracy");
  EXPECT_GT(acc, 0.3);
  EXPECT_LT(acc, 1.0);
  EXPECT_GT(test::metric(rows.back(), "train_accuracy"), 0.3);
  // samples_per_epoch 0: train tokens / context windows of 32 → steps per epoch.
  const int64_t steps = ((train_end / 16) + 31) / 32;
  EXPECT_EQ(rows.back().at("step").get<int64_t>(), 3 * steps);

  // The run directory: the vocabulary (the same tokenizer), and the initial weights (not the final ones).
  EXPECT_EQ(data::Tokenizer::load((run / "vocab.json").string()), tok);
  const auto init = test::tensor_bytes(run / "init.safetensors");
  ASSERT_EQ(init.size(), 3u);
  EXPECT_EQ(init[0].name, "0.weight");
  const fs::path last = run / app::checkpoint_name(3 * steps);
  const auto trained = test::tensor_bytes(last, "model.");
  ASSERT_EQ(trained.size(), 3u);
  EXPECT_EQ(trained[0].bytes.size(), init[0].bytes.size());
  EXPECT_NE(trained[0].bytes, init[0].bytes);
  // optimizer.no_decay: a second parameter group (weight_decay 0) in the optimizer's state.
  EXPECT_EQ(test::tensor_bytes(last, "optimizer.group.1.lr").size(), 1u);
  EXPECT_TRUE(test::tensor_bytes(last, "optimizer.group.2.").empty());

  // ember-eval reads the vocabulary next to the checkpoint and reports what the last evaluation did.
  const Result eval = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint " + last.string());
  ASSERT_EQ(eval.rc, 0) << eval.output;
  char expected[64];
  std::snprintf(expected, sizeof expected, "val loss %.4f nats/token", val);
  test::expect_in(eval.output, {expected, "bits/char", "perplexity", "next-token accuracy"});

  // Other text with the same characters: the checkpoint refuses it (resume and eval alike).
  const std::string other = s.write("other.txt", make_corpus(99));
  const Result wrong = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint " + last.string() +
                                 " --set data.path=" + other);
  EXPECT_EQ(wrong.rc, 2) << wrong.output;
  test::expect_in(wrong.output, {"trained on other text", "point data.path at the run's corpus"});
  // A corpus with a character outside the run's vocabulary is refused, naming it.
  const std::string odd = s.write("odd.txt", text + "zebra!");
  const Result outside = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint " +
                                   last.string() + " --set data.path=" + odd);
  EXPECT_NE(outside.rc, 0);
  EXPECT_NE(outside.output.find("'z'"), std::string::npos) << outside.output;
  // The model must predict the vocabulary.
  const Result narrow = train("--config " + cfg + " --out " + (s.dir() / "narrow").string() +
                              " --set model.1.out_features=" + std::to_string(vocab - 1));
  EXPECT_EQ(narrow.rc, 2);
  test::expect_in(narrow.output, {"language_model needs logits [batch, context, vocab]",
                                  "out_features: " + std::to_string(vocab)});
  // The --dry-run summary takes token ids.
  const Result dry = train("--config " + cfg + " --dry-run");
  ASSERT_EQ(dry.rc, 0) << dry.output;
  test::expect_in(dry.output, {"Embedding", "Memory estimate"});
}

// A language-model run killed mid-epoch resumes to the same weights, metrics and batches bit for bit:
// dropout, loader workers, accumulation and the per-epoch windows all continue where they were.
TEST(TrainTasks, LanguageModelResumesExactlyMidEpoch) {
  test::Scratch s;
  const std::string text = make_corpus();
  const std::string corpus = s.write("corpus.txt", text);
  const std::string cfg = s.write(
      "lm.yaml", lm_config(corpus, bigram_model(vocab_of(text), /*dropout=*/true),
                           "output: {checkpoint_every_steps: 3, keep_last: 20}\n"));
  // 200 windows of 16 in batches of 16: 13 batches, 7 optimizer steps of 2 micro-batches per epoch.
  const std::string sets = " --set epochs=2 data.samples_per_epoch=200 data.batch_size=16 data.workers=2 "
                           "optimizer.accumulate_steps=2";
  const fs::path straight = s.dir() / "straight", resumed = s.dir() / "resumed";
  const Result r = train("--config " + cfg + " --out " + straight.string() + sets + " --trace-batches " +
                         (s.dir() / "straight.jsonl").string());
  ASSERT_EQ(r.rc, 0) << r.output;
  const auto trace = json_lines(s.dir() / "straight.jsonl");
  ASSERT_EQ(trace.size(), 14u);
  std::set<int64_t> epoch1, epoch2;
  for (size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(trace[i].at("step").get<int64_t>(), static_cast<int64_t>(i) + 1);
    const auto starts = trace[i].at("starts").get<std::vector<int64_t>>();
    EXPECT_EQ(starts.size(), i % 7 == 6 ? 8u : 32u) << "step " << i + 1;  // the epoch's last step: 1 batch of 8
    for (int64_t st : starts) (i < 7 ? epoch1 : epoch2).insert(st);
  }
  EXPECT_NE(epoch1, epoch2) << "every epoch must draw new windows";

  cut_after(straight, resumed, 9);  // mid epoch 2
  fs::copy_file(s.dir() / "straight.jsonl", s.dir() / "resumed.jsonl");
  const Result again = train("--resume " + resumed.string() + " --trace-batches " + (s.dir() / "resumed.jsonl").string());
  ASSERT_EQ(again.rc, 0) << again.output;
  EXPECT_NE(again.output.find("resumed from"), std::string::npos) << again.output;
  EXPECT_EQ(test::metrics_rows_without_timing(resumed), test::metrics_rows_without_timing(straight));
  test::expect_same_tensors(resumed / app::checkpoint_name(14), straight / app::checkpoint_name(14), "model.");
  test::expect_same_tensors(resumed / app::checkpoint_name(14), straight / app::checkpoint_name(14), "optimizer.");
  EXPECT_EQ(json_lines(s.dir() / "resumed.jsonl"), trace);

  // Resuming on other text is refused.
  const fs::path moved = s.dir() / "moved";
  cut_after(straight, moved, 9);
  std::ofstream(corpus, std::ios::trunc) << make_corpus(8);
  const Result wrong = train("--resume " + moved.string());
  EXPECT_EQ(wrong.rc, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("trained on other text"), std::string::npos) << wrong.output;
  // A run directory without its vocabulary cannot resume.
  std::ofstream(corpus, std::ios::trunc) << text;
  fs::remove(moved / "vocab.json");
  const Result novocab = train("--resume " + moved.string());
  EXPECT_EQ(novocab.rc, 2) << novocab.output;
  EXPECT_NE(novocab.output.find("vocab.json: the run's vocabulary is missing"), std::string::npos) << novocab.output;
}

// Gradient accumulation: 4 micro-batches of 8 make the same update as one batch of 32 (SGD, no dropout),
// including the epoch's short last step (100 windows: 13 micro-batches, the last of 4 examples), so both
// runs see the same examples per step and end with the same weights (up to the order of float sums).
TEST(TrainTasks, AccumulatedMicroBatchesEqualOneLargeBatch) {
  test::Scratch s;
  const std::string text = make_corpus();
  const std::string corpus = s.write("corpus.txt", text);
  const std::string cfg = s.write(
      "lm.yaml", lm_config(corpus, bigram_model(vocab_of(text)), "", "{type: sgd, lr: 0.5, momentum: 0.9}"));
  const std::string common = " --set epochs=2 data.samples_per_epoch=100 optimizer.clip_grad_norm=5";
  const fs::path small = s.dir() / "small", large = s.dir() / "large";
  const Result a = train("--config " + cfg + " --out " + small.string() + common +
                         " data.batch_size=8 optimizer.accumulate_steps=4 --trace-batches " +
                         (s.dir() / "small.jsonl").string());
  ASSERT_EQ(a.rc, 0) << a.output;
  const Result b = train("--config " + cfg + " --out " + large.string() + common + " data.batch_size=32 --trace-batches " +
                         (s.dir() / "large.jsonl").string());
  ASSERT_EQ(b.rc, 0) << b.output;
  const auto ta = json_lines(s.dir() / "small.jsonl"), tb = json_lines(s.dir() / "large.jsonl");
  ASSERT_EQ(ta.size(), 8u);  // 4 optimizer steps per epoch
  EXPECT_EQ(ta, tb);         // the same examples in every step
  const auto ra = test::metrics_rows(small), rb = test::metrics_rows(large);
  ASSERT_EQ(ra.size(), 2u);
  ASSERT_EQ(rb.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(ra[e].at("step"), rb[e].at("step"));
    EXPECT_NEAR(test::metric(ra[e], "train_loss"), test::metric(rb[e], "train_loss"), 1e-5);
    EXPECT_NEAR(test::metric(ra[e], "test_loss"), test::metric(rb[e], "test_loss"), 1e-5);
  }
  const auto wa = test::tensor_bytes(small / app::checkpoint_name(8), "model.");
  const auto wb = test::tensor_bytes(large / app::checkpoint_name(8), "model.");
  const auto w0 = test::tensor_bytes(small / "init.safetensors");
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    const std::vector<float> x = floats(wa[i]), y = floats(wb[i]), x0 = floats(w0[i]);
    ASSERT_EQ(x.size(), y.size());
    double moved = 0;
    for (size_t j = 0; j < x.size(); ++j) {
      ASSERT_NEAR(x[j], y[j], 1e-5 * std::max(1.0f, std::abs(y[j]))) << wa[i].name << " element " << j;
      moved = std::max(moved, static_cast<double>(std::abs(y[j] - x0[j])));
    }
    EXPECT_GT(moved, 1e-3) << wa[i].name << " did not train";
  }
}

// Regression on a CSV table: y = 2·x1 − 3·x2 + 1 + noise, a linear model, mse (then l1); no accuracy.
TEST(TrainTasks, RegressionOnCsv) {
  test::Scratch s;
  std::string train_csv = "x1,x2,y\n", test_csv = "x1,x2,y\n";
  uint32_t state = 11;
  const auto uniform = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<double>(state >> 8) / static_cast<double>(1u << 24) * 2 - 1;
  };
  for (int i = 0; i < 300; ++i) {
    const double x1 = uniform(), x2 = uniform(), y = 2 * x1 - 3 * x2 + 1 + 0.01 * uniform();
    (i < 240 ? train_csv : test_csv) += std::to_string(x1) + "," + std::to_string(x2) + "," + std::to_string(y) + "\n";
  }
  const std::string train_file = s.write("train.csv", train_csv), test_file = s.write("test.csv", test_csv);
  const std::string cfg = s.write(
      "reg.yaml", "task: regression\nepochs: 15\ndata: {dataset: csv, train_file: " + train_file + ", test_file: " +
                      test_file + ", target_column: y, batch_size: 16, workers: 0}\n"
                      "model: [{type: linear, out_features: 1}]\noptimizer: {type: sgd, lr: 0.1}\n");
  const fs::path run = s.dir() / "run";
  const Result r = train("--config " + cfg + " --out " + run.string());
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("epoch 15/15: train loss"), std::string::npos) << r.output;
  const auto rows = test::metrics_rows(run);
  ASSERT_EQ(rows.size(), 15u);
  EXPECT_GT(test::metric(rows.front(), "train_loss"), 0.05);
  EXPECT_LT(test::metric(rows.back(), "test_loss"), 1e-3);  // the noise's variance is about 3e-5
  EXPECT_TRUE(rows.back().at("train_accuracy").is_null());
  EXPECT_TRUE(rows.back().at("test_accuracy").is_null());
  // The weights found: [2, -3] and bias 1.
  const auto w = test::tensor_bytes(run / app::checkpoint_name(15 * 15), "model.");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NEAR(floats(w[0])[0], 2.0, 0.02);
  EXPECT_NEAR(floats(w[0])[1], -3.0, 0.02);
  EXPECT_NEAR(floats(w[1])[0], 1.0, 0.02);
  const Result eval = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint " +
                                (run / app::checkpoint_name(225)).string());
  ASSERT_EQ(eval.rc, 0) << eval.output;
  test::expect_in(eval.output, {"examples 60", "test loss (mse)"});

  const fs::path l1 = s.dir() / "l1";
  const Result r1 = train("--config " + cfg + " --out " + l1.string() + " --set loss.type=l1");
  ASSERT_EQ(r1.rc, 0) << r1.output;
  const auto l1_rows = test::metrics_rows(l1);  // mean |error|: sign gradients of size lr keep it near 0.05
  EXPECT_LT(test::metric(l1_rows.back(), "test_loss"), 0.1);
  EXPECT_LT(test::metric(l1_rows.back(), "test_loss"), 0.5 * test::metric(l1_rows.front(), "train_loss"));
  // huber: linear beyond delta (bounded gradients, as l1's, far from the fit), quadratic near it
  const fs::path huber = s.dir() / "huber";
  const Result rh = train("--config " + cfg + " --out " + huber.string() + " --set loss.type=huber --set loss.delta=0.5");
  ASSERT_EQ(rh.rc, 0) << rh.output;
  const auto huber_rows = test::metrics_rows(huber);
  EXPECT_LT(test::metric(huber_rows.back(), "test_loss"), 0.02);
  EXPECT_LT(test::metric(huber_rows.back(), "test_loss"), 0.05 * test::metric(huber_rows.front(), "train_loss"));
  EXPECT_NE(test::metric(huber_rows.front(), "train_loss"), test::metric(rows.front(), "train_loss"));  // not mse's
  // A model with two outputs does not fit one target column.
  const Result wide = train("--config " + cfg + " --out " + (s.dir() / "wide").string() +
                            " --set model.0.out_features=2");
  EXPECT_EQ(wide.rc, 2);
  EXPECT_NE(wide.output.find("does not fit the target"), std::string::npos) << wide.output;
}

// ember-generate on runs of a whole GPT (incremental decode with its key/value cache) and of a block-by-block
// model (a windowed recompute): the prompt, then exactly --tokens characters of the run's vocabulary, the
// same text for the same seed, greedy decoding that matches the model's own argmax, and the errors.
TEST(TrainTasks, GenerateSamplesFromATrainedRun) {
  test::Scratch s;
  const std::string text = make_corpus();
  const std::string corpus = s.write("corpus.txt", text);
  const std::string gpt = "{type: gpt, layers: 1, heads: 2, dim: 16, dropout: 0.0}";
  const std::string cfg = s.write("gpt.yaml", lm_config(corpus, gpt, "", "{type: adamw, lr: 0.01}"));
  const fs::path run = s.dir() / "gpt";
  const Result r = train("--config " + cfg + " --out " + run.string() + " --set epochs=1");
  ASSERT_EQ(r.rc, 0) << r.output;

  const std::string app = EMBER_GENERATE_APP;
  const auto generate = [&](const fs::path& dir, const std::string& args) {
    return test::run(app + " --device cpu --checkpoint " + dir.string() + " " + args);
  };
  const data::Tokenizer tok = data::Tokenizer::chars(text);
  // stdout: the prompt, the new text, a newline; stderr (merged here, after it): the speed line.
  const Result a = generate(run, "--prompt 'the cat' --tokens 40 --seed 3 --top-k 5");
  ASSERT_EQ(a.rc, 0) << a.output;
  test::expect_in(a.output, {"40 tokens in", "tokens/s on cpu", "incremental decode", "prompt 7 tokens"});
  ASSERT_EQ(a.output.rfind("the cat", 0), 0u) << a.output;
  const std::string sampled = a.output.substr(7, 40);
  EXPECT_NO_THROW(tok.encode(sampled)) << "not the run's characters: " << sampled;
  EXPECT_EQ(generate(run, "--prompt 'the cat' --tokens 40 --seed 3 --top-k 5").output.substr(0, 47), a.output.substr(0, 47));

  // Greedy: each new character is the argmax of the model's logits over the text so far.
  const Result g = generate(run, "--prompt 'the dog' --tokens 12 --temperature 0");
  ASSERT_EQ(g.rc, 0) << g.output;
  ASSERT_EQ(g.output.rfind("the dog", 0), 0u) << g.output;
  const std::string greedy = g.output.substr(7, 12);
  {
    Generator init(0);
    auto model = nn::build_model({nn::LayerSpec{"gpt", {{"layers", int64_t{1}}, {"heads", int64_t{2}}, {"dim", int64_t{16}},
                                                        {"dropout", 0.0}}, "test"}},
                                 {.sample_shape = {16}, .dtype = DType::i64, .vocab_size = tok.vocab_size()}, &init);
    std::vector<std::string> problems;
    model->load_state_dict(app::newest_valid_checkpoint(run, problems)->take("model."));
    model->eval();
    NoGradGuard no_grad;
    std::vector<int64_t> ids = tok.encode("the dog");
    for (size_t i = 0; i < greedy.size(); ++i) {
      const int64_t n = std::min<int64_t>(static_cast<int64_t>(ids.size()), 16);
      const Tensor logits = model->forward(from_vector(std::vector<int64_t>(ids.end() - n, ids.end()), {1, n}));
      const int64_t next = argmax(logits.select(1, n - 1), 1).item<int64_t>();
      ASSERT_EQ(tok.decode(std::vector<int64_t>{next}), greedy.substr(i, 1)) << "character " << i << " of " << greedy;
      ids.push_back(next);
    }
  }

  // A block-by-block model has no cache: the windowed recompute serves it.
  const std::string bigram_cfg = s.write("bigram.yaml", lm_config(corpus, bigram_model(tok.vocab_size())));
  const fs::path bigram_run = s.dir() / "bigram";
  ASSERT_EQ(train("--config " + bigram_cfg + " --out " + bigram_run.string() + " --set epochs=1").rc, 0);
  const Result w = generate(bigram_run, "--tokens 10");
  ASSERT_EQ(w.rc, 0) << w.output;
  test::expect_in(w.output, {"10 tokens in", "windowed recompute, no cache"});

  // Errors: no such run; a character the vocabulary lacks; a run without vocab.json.
  const Result none = generate(s.dir() / "nope", "");
  EXPECT_EQ(none.rc, 2);
  test::expect_in(none.output, {"--checkpoint", "no such file or directory"});
  const Result odd = generate(run, "--prompt 'zebra'");
  EXPECT_EQ(odd.rc, 1);
  test::expect_in(odd.output, {"--prompt", "'z'"});
  fs::remove(run / "vocab.json");
  const Result novocab = generate(run, "");
  EXPECT_EQ(novocab.rc, 2);
  test::expect_in(novocab.output, {"vocab.json is missing", "task: language_model"});
}

// A SentencePiece tokenizer trained from the config: the run keeps its model (vocab.json names
// tokenizer.model), bits per byte counts the bytes of text the validation tokens decode to, ember-eval,
// ember-generate and --resume use the run's model, a given model_file is copied into the run, and a
// vocab_size the corpus cannot fill is a config error naming the key.
TEST(TrainTasks, SentencePieceTokenizerRun) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer build cannot keep libsentencepiece's protobuf apart from ember-train's "
                  "(data/sentencepiece.cpp); test_sentencepiece runs there, this test in the normal build";
#endif
  test::Scratch s;
  const std::string text = make_corpus();
  const std::string corpus = s.write("corpus.txt", text);
  const std::string gpt = "{type: gpt, layers: 1, heads: 2, dim: 16, dropout: 0.0}";
  const std::string cfg = s.write("spm.yaml", lm_config(corpus, gpt, "output: {checkpoint_every_steps: 2, keep_last: 50}\n",
                                                        "{type: adamw, lr: 0.01}"));
  const auto with_tokenizer = [](const std::string& map) { return " --set epochs=1 'data.tokenizer=" + map + "'"; };
  const std::string bpe = with_tokenizer("{type: sentencepiece, vocab_size: 340, model_type: bpe}");
  const fs::path run = s.dir() / "run";
  const Result r = train("--config " + cfg + " --out " + run.string() + bpe);
  ASSERT_EQ(r.rc, 0) << r.output;
  test::expect_in(r.output, {"epoch 1/1: train loss", "bits/byte"});

  // The run's tokenizer is the model trained from the config (again here: training is reproducible).
  ASSERT_TRUE(fs::is_regular_file(run / "tokenizer.model"));
  const data::Tokenizer tok = data::Tokenizer::load((run / "vocab.json").string());
  ASSERT_EQ(tok.type(), data::Tokenizer::Type::SentencePiece);
  EXPECT_EQ(tok.vocab_size(), 340);
  const data::TextCorpus read = data::read_text(corpus);
  const std::vector<int64_t> ids = tok.encode(read);
  EXPECT_EQ(ids, data::Tokenizer::sentencepiece(read, {.vocab_size = 340, .model_type = "bpe"}).encode(read));
  EXPECT_EQ(tok.decode(ids), text);

  // Bits per byte: bits per token × the validation targets' tokens / the bytes of text they decode to.
  const auto n = static_cast<int64_t>(ids.size());
  const auto train_end = static_cast<int64_t>(std::llround(0.9 * static_cast<double>(n)));
  const int64_t targets = (n - train_end - 1) / 16 * 16;
  const std::span<const int64_t> predicted(ids.data() + train_end + 1, static_cast<size_t>(targets));
  const int64_t bytes = tok.text_bytes(predicted);
  EXPECT_EQ(bytes, static_cast<int64_t>(tok.decode(predicted).size()));
  const auto rows = test::metrics_rows(run);
  ASSERT_EQ(rows.size(), 1u);
  const double loss = test::metric(rows.back(), "test_loss");
  const double bits_per_byte = test::metric(rows.back(), "test_bits_per_byte");
  EXPECT_NEAR(bits_per_byte, loss / std::log(2.0) * static_cast<double>(targets) / static_cast<double>(bytes), 1e-9);
  EXPECT_LT(bits_per_byte, 0.5 * loss / std::log(2.0)) << "a piece of this corpus holds more than 2 bytes";

  // ember-eval: the same numbers, from the run's vocab.json and tokenizer.model.
  const int64_t steps = rows.back().at("step").get<int64_t>();
  const fs::path last = run / app::checkpoint_name(steps);
  const Result eval = test::run(std::string(EMBER_EVAL_APP) + " --config " + (run / "config.yaml").string() +
                                " --checkpoint " + last.string());
  ASSERT_EQ(eval.rc, 0) << eval.output;
  char expected[96];
  std::snprintf(expected, sizeof expected, "val loss %.4f nats/token, %.4f bits/byte, %.4f bits/token (%lld bytes",
                loss, bits_per_byte, loss / std::log(2.0), static_cast<long long>(bytes));
  test::expect_in(eval.output, {expected, "perplexity"});

  // ember-generate: the prompt, then the new tokens' text (pieces of the run's model).
  const Result g = test::run(std::string(EMBER_GENERATE_APP) + " --device cpu --checkpoint " + run.string() +
                             " --prompt 'the cat' --tokens 20 --seed 3");
  ASSERT_EQ(g.rc, 0) << g.output;
  ASSERT_EQ(g.output.rfind("the cat", 0), 0u) << g.output;
  test::expect_in(g.output, {"20 tokens in", "prompt " + std::to_string(tok.encode("the cat").size()) + " tokens"});

  // --resume reads the run's model: killed after step 2, it ends as the straight run did; without its
  // tokenizer.model it stops, naming it.
  const fs::path resumed = s.dir() / "resumed";
  cut_after(run, resumed, 2);
  const Result again = train("--resume " + resumed.string());
  ASSERT_EQ(again.rc, 0) << again.output;
  EXPECT_EQ(test::metrics_rows_without_timing(resumed), test::metrics_rows_without_timing(run));
  test::expect_same_tensors(resumed / app::checkpoint_name(steps), last, "model.");
  const fs::path lost = s.dir() / "lost";
  cut_after(run, lost, 2);
  fs::remove(lost / "tokenizer.model");
  const Result missing = train("--resume " + lost.string());
  EXPECT_NE(missing.rc, 0);
  test::expect_in(missing.output, {(lost / "tokenizer.model").string(), "is missing"});

  // model_file: a model made by spm_train (tests/data, tools/make_spm_model.sh) is used and kept as it is.
  const std::string given = std::string(EMBER_TEST_DATA_DIR) + "/spm_llama_style.model";
  const fs::path llama = s.dir() / "llama";
  const Result m = train("--config " + cfg + " --out " + llama.string() +
                         with_tokenizer("{type: sentencepiece, model_file: " + given + "}"));
  ASSERT_EQ(m.rc, 0) << m.output;
  EXPECT_EQ(test::read_text(llama / "tokenizer.model"), test::read_text(given));
  EXPECT_EQ(data::Tokenizer::load((llama / "vocab.json").string()).vocab_size(), 400);

  // A vocabulary the corpus cannot fill: sentencepiece's reason, under the config key.
  const Result small = train("--config " + cfg + " --out " + (s.dir() / "small").string() +
                             with_tokenizer("{type: sentencepiece, vocab_size: 100}"));
  EXPECT_EQ(small.rc, 2) << small.output;
  test::expect_in(small.output, {"data.tokenizer.vocab_size: 100 does not fit the corpus",
                                 "Vocabulary size is smaller than required_chars"});
}

// data.dataset: image_folder and cifar10 end to end: a folder of PNGs split into train and test (classes
// saved as classes.json, used by ember-eval to name them), a bad file failing before training (naming it)
// or skipped, and CIFAR-10's binary files.
TEST(TrainTasks, ImageFolderAndCifar10) {
  test::Scratch s;
  const fs::path root = s.dir() / "shades";
  uint32_t state = 5;
  for (int i = 0; i < 40; ++i) {  // "dark" and "light" 6×6 gray images: separable by their mean
    const bool light = i % 2 == 1;
    std::vector<uint8_t> px(36);
    for (uint8_t& p : px) {
      state = state * 1664525u + 1013904223u;
      p = static_cast<uint8_t>((light ? 150 : 20) + (state >> 24) % 80);
    }
    const fs::path dir = root / (light ? "light" : "dark");
    fs::create_directories(dir);
    const auto png = data::encode_png(px.data(), 6, 6, 1);
    std::ofstream(dir / (std::to_string(i) + ".png"), std::ios::binary)
        .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  }
  const std::string cfg = s.write(
      "img.yaml", "epochs: 8\ndata: {dataset: image_folder, train_dir: " + root.string() +
                      ", split_fraction: 0.25, batch_size: 8, workers: 2}\n"
                      "model: [{type: flatten}, {type: linear, out_features: 2}]\noptimizer: {type: adam, lr: 0.05}\n");
  const fs::path run = s.dir() / "run";
  const Result r = train("--config " + cfg + " --out " + run.string());
  ASSERT_EQ(r.rc, 0) << r.output;
  test::expect_in(r.output, {"30 train / 10 test examples"});
  EXPECT_EQ(app::read_class_names(run / "classes.json"), (std::vector<std::string>{"dark", "light"}));
  EXPECT_EQ(test::metric(test::metrics_rows(run).back(), "test_accuracy"), 1.0);
  const Result eval = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint " +
                                (run / app::checkpoint_name(8 * 4)).string());
  ASSERT_EQ(eval.rc, 0) << eval.output;
  test::expect_in(eval.output, {"examples 10", "test accuracy 100.00%", " 0 dark ", " 1 light "});

  // A class folder added since: a resumed run refuses to continue with other classes.
  fs::create_directories(root / "medium");
  fs::copy_file(root / "dark" / "0.png", root / "medium" / "0.png");
  const Result resumed = train("--resume " + run.string());
  EXPECT_EQ(resumed.rc, 2);
  test::expect_in(resumed.output, {"the dataset's classes are now [dark, light, medium]", "classes.json"});
  fs::remove_all(root / "medium");

  // A file that is no image: the run fails before training, naming it; skipped with on_bad_file.
  const fs::path bad = root / "light" / "broken.png";
  std::ofstream(bad) << "not a png";
  const Result failed = train("--config " + cfg + " --out " + (s.dir() / "bad").string());
  EXPECT_EQ(failed.rc, 1);
  test::expect_in(failed.output, {bad.string() + ": neither a PNG nor a JPEG", "on_bad_file: skip_with_warning"});
  EXPECT_FALSE(fs::exists(s.dir() / "bad" / "init.safetensors"));
  const Result skipped = train("--config " + cfg + " --out " + (s.dir() / "skip").string() +
                               " --set data.on_bad_file=skip_with_warning --set epochs=1");
  ASSERT_EQ(skipped.rc, 0) << skipped.output;
  test::expect_in(skipped.output, {"skipping " + bad.string()});
  // The test folder must have the training folder's classes.
  fs::create_directories(s.dir() / "other" / "dark");
  fs::copy_file(root / "dark" / "0.png", s.dir() / "other" / "dark" / "0.png");
  const Result classes = train("--config " + cfg + " --out " + (s.dir() / "cls").string() + " --set data.test_dir=" +
                               (s.dir() / "other").string() + " --set data.on_bad_file=skip_with_warning");
  EXPECT_EQ(classes.rc, 2);
  test::expect_in(classes.output, {"has the classes [dark], but data.train_dir"});

  // CIFAR-10: 5 training files and a test file of a few records each.
  write_cifar10(s.dir() / "cifar-10-batches-bin");
  const std::string cifar = s.write(
      "cifar.yaml", "epochs: 1\ndata: {dataset: cifar10, root: " + s.dir().string() + ", batch_size: 4, workers: 0, "
                    "transforms: [{type: random_crop, size: 32, padding: 4}, {type: random_horizontal_flip}]}\n"
                    "model: [{type: conv2d, out_channels: 4, kernel_size: 3}, {type: relu}, {type: flatten}, "
                    "{type: linear, out_features: 10}]\noptimizer: {type: sgd, lr: 0.01}\n");
  const Result c = train("--config " + cifar + " --out " + (s.dir() / "cifar").string());
  ASSERT_EQ(c.rc, 0) << c.output;
  test::expect_in(c.output, {"20 train / 4 test examples"});
  EXPECT_EQ(app::read_class_names(s.dir() / "cifar" / "classes.json")[0], "airplane");
}

// The shipped ResNet configs train (one epoch, narrowed to width 2 with --set): configs/cifar10_resnet.yaml on
// small files in CIFAR-10's format (3x32x32), configs/fashion_resnet.yaml on a few Fashion-MNIST images
// (1x28x28); the checkpoints hold torchvision's names.
TEST(TrainTasks, ResNetConfigs) {
  test::Scratch s;
  write_cifar10(s.dir() / "cifar-10-batches-bin");
  const std::string configs = std::string(EMBER_SOURCE_DIR) + "/configs/";
  const std::string narrow = " --set epochs=1 --set model.width=2 --set data.workers=0 --device cpu";
  const fs::path cifar = s.dir() / "cifar";
  const Result c = train("--config " + configs + "cifar10_resnet.yaml --out " + cifar.string() + narrow +
                         " --set data.root=" + s.dir().string() + " --set data.batch_size=4");
  ASSERT_EQ(c.rc, 0) << c.output;
  test::expect_in(c.output, {"20 train / 4 test examples"});
  const fs::path fashion = s.dir() / "fashion";
  const Result f = train("--config " + configs + "fashion_resnet.yaml --out " + fashion.string() + narrow +
                         " --set data.limit=64 --set data.test_limit=32 --set data.batch_size=16");
  ASSERT_EQ(f.rc, 0) << f.output;
  test::expect_in(f.output, {"64 train / 32 test examples"});
  for (const fs::path& run : {cifar / app::checkpoint_name(5), fashion / app::checkpoint_name(4)}) {
    const auto saved = safetensors::load(run.string());
    bool found = false;
    for (const auto& [name, t] : saved.tensors)
      if (name.ends_with("layer4.1.bn2.running_var")) found = t.shape() == Shape({16});
    EXPECT_TRUE(found) << run;
  }
}
