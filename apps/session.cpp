#include "apps/session.h"

#include "apps/registries.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "base/format.h"

namespace ember::app {
namespace {

data::DatasetPtr limited(data::DatasetPtr set, int64_t limit) {
  if (limit <= 0 || limit >= set->size()) return set;
  std::vector<int64_t> first(static_cast<size_t>(limit));
  std::iota(first.begin(), first.end(), 0);
  return std::make_shared<data::Subset>(std::move(set), std::move(first));
}

std::shared_ptr<data::IdxDataset> open_split(const DataConfig& d, data::Split split) {
  if (d.dataset == "fashion_mnist") return data::fashion_mnist(split, d.dir);
  const bool train = split == data::Split::Train;
  return std::make_shared<data::IdxDataset>(train ? d.train_images : d.test_images, train ? d.train_labels : d.test_labels);
}

std::shared_ptr<data::CsvDataset> open_csv(const TrainConfig& c, bool train) {
  return std::make_shared<data::CsvDataset>(
      train ? c.data.train_file : c.data.test_file,
      data::CsvOptions{.label_column = c.data.target_column,
                       .target_dtype = c.task == "regression" ? DType::f32 : DType::i64});
}

// "<bytes> bytes, fnv1a <hex>": what checkpoints remember of the text a run trained on.
std::string fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (const char ch : text) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::to_string(text.size()) + " bytes, fnv1a " + buf;
}

// data.tokenizer for a new run: fitted (char) or trained (sentencepiece) on the corpus, or model_file's.
data::Tokenizer new_tokenizer(const TrainConfig& c, const data::TextCorpus& corpus, const std::string& corpus_name) {
  const DataConfig& d = c.data;
  if (d.tokenizer == "byte") return data::Tokenizer::bytes();
  if (d.tokenizer == "char") return data::Tokenizer::chars(corpus);
  const SentencePieceConfig& sp = d.sentencepiece;
  const auto it = c.origin.find("data.tokenizer");
  const std::string where = it != c.origin.end() ? it->second : c.source;
  if (!sp.model_file.empty()) {
    if (!std::filesystem::is_regular_file(sp.model_file))
      throw ConfigError(where + ": data.tokenizer.model_file: the file '" + sp.model_file + "' does not exist; give "
                        "a SentencePiece .model file, or leave model_file out to train one on the corpus");
    return data::Tokenizer::sentencepiece_file(sp.model_file);
  }
  try {
    return data::Tokenizer::sentencepiece(corpus, {.vocab_size = sp.vocab_size,
                                                   .model_type = sp.model_type,
                                                   .character_coverage = sp.character_coverage,
                                                   .byte_fallback = sp.byte_fallback});
  } catch (const data::SentencePieceTrainingError& e) {
    throw ConfigError(where + ": data.tokenizer.vocab_size: " +
                      std::to_string(sp.vocab_size) + " does not fit the corpus " + corpus_name + ": " + e.what());
  }
}

// Text data: the corpus, its tokenizer (new, or read from `vocab_file`) and the train/validation windows.
void open_text(Session& s, const std::string& vocab_file) {
  const DataConfig& d = s.config.data;
  const data::TextCorpus corpus = d.path.empty() ? data::read_fortunes() : data::read_text(d.path);
  const std::string corpus_name = d.path.empty() ? std::string(data::kFortunesDir) : d.path;
  if (vocab_file.empty()) {
    s.tokenizer = new_tokenizer(s.config, corpus, corpus_name);
  } else {
    if (!std::filesystem::is_regular_file(vocab_file))
      throw ConfigError(vocab_file + ": the run's vocabulary is missing; it is written next to the checkpoints by "
                        "ember-train (a text run directory without it cannot be resumed or evaluated)");
    s.tokenizer = data::Tokenizer::load(vocab_file);
    if (d.tokenizer != s.tokenizer->type_name())
      throw ConfigError(vocab_file + " is a " + s.tokenizer->type_name() + " vocabulary, but data.tokenizer is " +
                        d.tokenizer + ": use the run's own config.yaml");
  }
  s.corpus_fingerprint = fingerprint(corpus.text);
  data::TextSplits splits;
  try {
    splits = data::text_splits(corpus, *s.tokenizer,
                               {.context = d.context, .val_fraction = d.val_fraction,
                                .samples_per_epoch = d.samples_per_epoch, .seed = s.config.seed});
  } catch (const Error& e) {
    throw Error(corpus_name + ": " + e.what() + (vocab_file.empty() ? "" : " (the vocabulary is " + vocab_file + ")"));
  }
  s.train_windows = splits.train;
  s.test_windows = splits.validation;
  s.input_dtype = DType::i64;
  s.vocab_size = s.tokenizer->vocab_size();
  // The text the evaluated windows predict (data.test_limit keeps the first ones): bits per byte.
  if (s.test_windows) {
    const int64_t windows = d.test_limit > 0 ? std::min(d.test_limit, s.test_windows->size()) : s.test_windows->size();
    s.test_tokens = windows * d.context;
    const int64_t first = s.test_windows->start(0) + 1;
    s.test_bytes = s.tokenizer->text_bytes(std::span<const int64_t>(splits.tokens->data() + first, s.test_tokens));
  }
}

data::ImageFolderOptions image_options(const DataConfig& d) {
  return {.extensions = d.extensions,
          .channels = d.channels == "auto" ? 0 : std::stoi(d.channels),
          .on_bad_file = d.on_bad_file == "fail" ? data::BadFile::fail : data::BadFile::skip_with_warning,
          .verify = d.verify == "decode"   ? data::Verify::decode
                    : d.verify == "header" ? data::Verify::header
                                           : data::Verify::fits,
          .cache_bytes = d.cache_mb << 20};
}

// Image folders: train_dir and test_dir, or train_dir split into data.split_fraction for testing.
void open_images(Session& s, bool train) {
  const DataConfig& d = s.config.data;
  const auto train_folder = train || d.test_dir.empty() ? std::make_shared<data::ImageFolder>(d.train_dir, image_options(d))
                                                        : nullptr;
  if (d.test_dir.empty()) {
    const int64_t n = train_folder->size();
    if (n < 2)
      throw ConfigError(d.train_dir + " holds " + std::to_string(n) + " image; a train/test split needs at least 2 "
                        "(or give data.test_dir)");
    const int64_t held = std::clamp<int64_t>(std::llround(static_cast<double>(n) * d.split_fraction), 1, n - 1);
    const auto parts = data::random_split(train_folder, {n - held, held}, static_cast<uint64_t>(d.split_seed));
    s.test_set = limited(parts[1], d.test_limit);
    if (train) s.train_set = limited(parts[0], d.limit);
    s.class_names = train_folder->classes();
    return;
  }
  const auto test_folder = std::make_shared<data::ImageFolder>(d.test_dir, image_options(d));
  s.test_set = limited(test_folder, d.test_limit);
  s.class_names = test_folder->classes();
  if (!train) return;
  if (train_folder->classes() != test_folder->classes())
    throw ConfigError("data.test_dir " + d.test_dir + " has the classes [" + join(test_folder->classes()) +
                      "], but data.train_dir " + d.train_dir + " has [" + join(train_folder->classes()) +
                      "]; both need the same class subfolders (a label is the class's place in sorted order)");
  if (train_folder->channels() != test_folder->channels())
    throw ConfigError("data.train_dir's images read as " + std::to_string(train_folder->channels()) +
                      " channels but data.test_dir's as " + std::to_string(test_folder->channels()) +
                      " (data.channels: auto takes 1 only when every image is gray); set data.channels: 1 or 3");
  s.train_set = limited(train_folder, d.limit);
}

// The datasets of the config's data section (train_set only when `train`).
void open_datasets(Session& s, bool train, const std::string& vocab_file) {
  const TrainConfig& c = s.config;
  const DataConfig& d = c.data;
  if (d.dataset == "text") {
    open_text(s, vocab_file);
    s.test_set = limited(s.test_windows, d.test_limit);
    if (train) s.train_set = limited(s.train_windows, d.limit);
  } else if (d.dataset == "csv") {
    s.test_set = limited(open_csv(c, false), d.test_limit);
    if (train) s.train_set = limited(open_csv(c, true), d.limit);
  } else if (d.dataset == "image_folder") {
    open_images(s, train);
  } else if (d.dataset == "cifar10") {
    s.test_set = limited(data::cifar10(d.root, data::Split::Test), d.test_limit);
    if (train) s.train_set = limited(data::cifar10(d.root, data::Split::Train), d.limit);
    s.class_names = data::cifar10_classes();
  } else {
    s.test_set = limited(open_split(d, data::Split::Test), d.test_limit);
    if (train) s.train_set = limited(open_split(d, data::Split::Train), d.limit);
  }
}

int64_t optimizer_steps(int64_t batches, int64_t accumulate) { return (batches + accumulate - 1) / accumulate; }

// The model (seeded by config.seed through model_gen), then the optimizer and scheduler, for s.sample_shape.
void build_model(Session& s, bool for_training) {
  s.model_gen.manual_seed(s.config.seed);
  try {
    s.model = nn::build_model(s.config.model,
                              {.sample_shape = s.sample_shape, .dtype = s.input_dtype, .vocab_size = s.vocab_size},
                              &s.model_gen);
  } catch (const Error& e) {
    throw ConfigError(e.what());  // the specs are config: exit code 2
  }
  s.model->to(s.device);
  if (s.config.task == "language_model") {  // logits over the vocabulary at every position, checked once here
    NoGradGuard no_grad;
    s.model->eval();
    Shape one{1};
    for (int64_t d : s.sample_shape) one.push_back(d);
    const Tensor out = s.model->forward(zeros(one, {.dtype = s.input_dtype}).to(s.device));
    s.model->train();
    if (out.dim() != 3 || out.size(1) != s.sample_shape[0] || out.size(2) != s.vocab_size)
      throw ConfigError("model: task language_model needs logits [batch, context, vocab] = [1, " +
                        std::to_string(s.sample_shape[0]) + ", " + std::to_string(s.vocab_size) +
                        "] for one window, but the model gives " + out.shape().str() + "; end it with {type: linear, "
                        "out_features: " + std::to_string(s.vocab_size) + "} (the tokenizer's vocabulary)");
  }
  if (for_training) {
    s.optimizer = make_optimizer(s.config.optimizer, *s.model);
    s.scheduler = make_scheduler(s.config, *s.optimizer, s.steps_per_epoch);
  }
}

}  // namespace


TrainShape train_shape(const TrainConfig& config) {
  const DataConfig& d = config.data;
  TrainShape out{.sample_shape = Shape{1, 28, 28}};
  int64_t size = 60000;  // Fashion-MNIST's training split
  if (d.dataset != "fashion_mnist") {
    Session s;
    s.config = config;
    open_datasets(s, true, "");
    out.sample_shape = s.train_set->spec().input_shape;
    out.input_dtype = s.input_dtype;
    out.vocab_size = s.vocab_size;
    size = s.train_set->size();
  }
  for (const data::AnyTransform& t : make_transforms(d, true)) out.sample_shape = t->output_shape(out.sample_shape);
  if (d.limit > 0) size = std::min(size, d.limit);
  // the loader keeps the last partial batch
  out.steps_per_epoch = optimizer_steps((size + d.batch_size - 1) / d.batch_size, config.optimizer.accumulate_steps);
  return out;
}

std::unique_ptr<Session> make_model_session(const TrainConfig& config, Device device, const TrainShape& shape) {
  auto s = std::make_unique<Session>();
  s->config = config;
  s->device = device;
  manual_seed(config.seed);
  s->sample_shape = shape.sample_shape;
  s->steps_per_epoch = shape.steps_per_epoch;
  s->input_dtype = shape.input_dtype;
  s->vocab_size = shape.vocab_size;
  build_model(*s, true);
  return s;
}

namespace {
bool per_step_schedule(const Session& s) { return s.scheduler && s.config.scheduler.interval == "step"; }
}  // namespace

void apply_update(Session& s, const Tensor& loss) {
  loss.backward();
  finish_update(s);
}

void finish_update(Session& s) {
  if (s.config.optimizer.clip_grad_norm > 0) optim::clip_grad_norm_(s.model->parameters(), s.config.optimizer.clip_grad_norm);
  s.optimizer->step();
  if (per_step_schedule(s)) s.scheduler->step();
}

void end_epoch_schedule(Session& s, double metric) {
  if (!s.scheduler || per_step_schedule(s)) return;
  if (auto* plateau = dynamic_cast<optim::ReduceLROnPlateau*>(s.scheduler.get())) plateau->step(metric);
  else s.scheduler->step();
}

std::unique_ptr<Session> make_session(const TrainConfig& config, Device device, bool for_training,
                                      const std::string& vocab_file) {
  auto s = std::make_unique<Session>();
  s->config = config;
  s->device = device;
  manual_seed(config.seed);
  const DataConfig& d = config.data;
  open_datasets(*s, for_training, vocab_file);
  s->test_loader = std::make_unique<data::DataLoader>(
      s->test_set, data::DataLoaderOptions{.batch_size = d.test_batch_size, .num_workers = static_cast<int>(d.workers),
                                           .transforms = make_transforms(d, false), .pin_memory = device.is_cuda()});
  if (for_training) {
    s->train_loader = std::make_unique<data::DataLoader>(
        s->train_set, data::DataLoaderOptions{.batch_size = d.batch_size, .shuffle = d.shuffle,
                                              .num_workers = static_cast<int>(d.workers), .seed = config.seed,
                                              .transforms = make_transforms(d, true), .pin_memory = device.is_cuda(),
                                              // data parallel: this process's shard (apps/data_parallel.h)
                                              .num_shards = distributed::world_size(), .shard = distributed::rank()});
    s->steps_per_epoch = optimizer_steps(s->train_loader->num_batches(), config.optimizer.accumulate_steps);
  }
  s->sample_shape = s->test_loader->input_shape();
  build_model(*s, for_training);
  return s;
}

namespace {
[[noreturn]] void rethrow_as_data_error(const std::string& data) {
  try {
    throw;
  } catch (const std::exception& e) {
    throw DataError("reading the " + data + " data: " + e.what());
  }
}
}  // namespace

data::DataLoader::Iterator first_batch(data::DataLoader& loader, const std::string& data) {
  try {
    return loader.begin();
  } catch (...) {
    rethrow_as_data_error(data);
  }
}

void next_batch(data::DataLoader::Iterator& it, const std::string& data) {
  try {
    ++it;
  } catch (...) {
    rethrow_as_data_error(data);
  }
}

Tensor task_loss(const TrainConfig& c, const Tensor& output, const Tensor& target, bool sum, bool smoothing) {
  namespace F = nn::functional;
  const F::Reduction reduction = sum ? F::Reduction::sum : F::Reduction::mean;
  if (c.task == "regression") {
    Tensor t = target;
    if (t.shape() != output.shape()) {
      if (t.numel() != output.numel() || output.dim() < 1 || output.size(0) != t.size(0))
        throw ConfigError("regression: the model's output " + output.shape().str() + " does not fit the target " +
                          t.shape().str() + " (one number per example from data.target_column): end the model with "
                          "{type: linear, out_features: 1}");
      t = t.reshape(output.shape());
    }
    if (t.dtype() != output.dtype()) t = t.to(output.dtype());
    if (c.loss == "l1") return F::l1_loss(output, t, {.reduction = reduction});
    if (c.loss == "smooth_l1") return F::smooth_l1_loss(output, t, {.reduction = reduction, .beta = c.loss_beta});
    if (c.loss == "huber") return F::huber_loss(output, t, {.reduction = reduction, .delta = c.loss_delta});
    return F::mse_loss(output, t, {.reduction = reduction});
  }
  const F::CrossEntropyOptions options{.label_smoothing = smoothing ? c.label_smoothing : 0.0, .reduction = reduction};
  if (c.task == "language_model") {
    if (output.dim() != 3 || target.dim() != 2 || output.size(0) != target.size(0) || output.size(1) != target.size(1))
      throw ConfigError("language_model: the model's output " + output.shape().str() + " does not fit the target " +
                        target.shape().str() + " [batch, context]: it must be logits [batch, context, vocab] (end "
                        "the model with {type: linear, out_features: " + std::to_string(std::max<int64_t>(1, output.size(-1))) +
                        "} over the vocabulary)");
    const int64_t v = output.size(2);
    return F::cross_entropy(output.reshape({output.size(0) * output.size(1), v}), target.reshape({target.numel()}),
                            options);
  }
  if (output.dim() != 2)
    throw ConfigError("classification: the model's output is " + output.shape().str() +
                      "; cross entropy needs [batch, classes] (end the model with a linear layer)");
  return F::cross_entropy(output, target, options);
}

Tensor correct_count(const TrainConfig& c, const Tensor& output, const Tensor& target) {
  if (c.task == "regression") return {};
  return sum(eq(argmax(output, output.dim() - 1), target));
}

int64_t count_correct(const TrainConfig& c, const Tensor& output, const Tensor& target, int64_t& predictions) {
  predictions = target.numel();
  const Tensor correct = correct_count(c, output, target);
  return correct.defined() ? correct.item<int64_t>() : 0;
}

EvalResult evaluate(nn::Module& model, data::DataLoader& loader, Device device, const TrainConfig& config) {
  NoGradGuard no_grad;
  model.eval();
  struct TrainModeAfter {  // also when the data fails mid-evaluation
    nn::Module& m;
    ~TrainModeAfter() { m.train(); }
  } train_mode_after{model};
  EvalResult r;
  double loss = 0;
  int64_t correct = 0, elements = 0;
  const bool classification = config.task == "classification";
  for (auto it = first_batch(loader, "test"); it != loader.end(); next_batch(it, "test")) {
    const data::Batch& batch = *it;
    const Tensor output = model.forward(batch.input.to(device));
    const Tensor target = batch.target.to(device);
    loss += task_loss(config, output, target, /*sum=*/true, /*smoothing=*/false).item<double>();
    int64_t predictions = 0;
    correct += count_correct(config, output, target, predictions);
    r.predictions += predictions;
    elements += config.task == "regression" ? output.numel() : predictions;
    r.examples += batch.target.size(0);
    if (!classification) continue;
    const std::vector<int64_t> pred = argmax(output, 1).to(kCPU).to_vector<int64_t>();
    const std::vector<int64_t> truth = batch.target.to_vector<int64_t>();
    const size_t classes = static_cast<size_t>(output.size(1));
    if (r.confusion.empty()) r.confusion.assign(classes, std::vector<int64_t>(classes, 0));
    for (size_t i = 0; i < pred.size(); ++i)
      if (truth[i] >= 0 && static_cast<size_t>(truth[i]) < classes) ++r.confusion[truth[i]][pred[i]];
  }
  r.loss = loss / static_cast<double>(std::max<int64_t>(elements, 1));
  if (config.task != "regression")
    r.accuracy = static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(r.predictions, 1));
  return r;
}

void check_corpus(const Session& s, const Checkpoint& c) {
  if (s.corpus_fingerprint.empty()) return;
  const std::string saved = c.has("corpus") ? c.get("corpus") : "";
  if (saved != s.corpus_fingerprint)
    throw ConfigError(c.source() + " was trained on other text (" + (saved.empty() ? "none recorded" : saved) +
                      ") than data.path now holds (" + s.corpus_fingerprint + ", " +
                      (s.config.data.path.empty() ? std::string(data::kFortunesDir) : s.config.data.path) +
                      "): point data.path at the run's corpus");
}

std::string bits_unit(const Session& s) {
  if (!s.tokenizer) return "bits_per_token";
  return s.tokenizer->type() == data::Tokenizer::Type::Char ? "bits_per_char" : "bits_per_byte";
}

double bits_per_unit(const Session& s, double nats_per_token) {
  const double bits = nats_per_token / std::log(2.0);
  if (!s.tokenizer || s.tokenizer->type() == data::Tokenizer::Type::Char || s.test_bytes == 0) return bits;
  return bits * static_cast<double>(s.test_tokens) / static_cast<double>(s.test_bytes);
}

std::string dry_run_report(Session& s) {
  const int64_t batch = s.config.data.batch_size;
  Shape input{batch};
  for (int64_t d : s.sample_shape) input.push_back(d);
  std::string out = nn::summary(*s.model, input, s.input_dtype);
  // Activations: each layer's output for one example, kept for backward and matched by its gradient.
  double activations = 0;
  {
    NoGradGuard no_grad;
    s.model->eval();
    Shape one{1};
    for (int64_t d : s.sample_shape) one.push_back(d);
    Tensor x = zeros(one, {.dtype = s.input_dtype}).to(s.device);
    activations += static_cast<double>(x.numel());
    if (const auto* seq = dynamic_cast<const nn::Sequential*>(s.model.get())) {
      for (size_t i = 0; i < seq->size(); ++i) {
        x = (*seq)[i]->forward(x);
        activations += static_cast<double>(x.numel());
      }
    } else {  // a whole model: its output only (an underestimate, said so below)
      activations += static_cast<double>(s.model->forward(x).numel());
    }
    s.model->train();
  }
  const OptimizerConfig& o = s.config.optimizer;
  const double state_per_param = optimizer_state_per_param(o);
  const double params = static_cast<double>(s.model->parameter_count()) * 4;
  const double acts = activations * static_cast<double>(batch) * 4 * 2;
  out += "\nMemory estimate per training step (f32, batch " + std::to_string(batch) + ", " + s.device.str() + "):\n";
  if (dynamic_cast<const nn::Sequential*>(s.model.get()) == nullptr)
    out += "  (a whole model: its activations count the input and output only, the layers inside it are not seen)\n";
  out += "  parameters " + format_mib(params) + ", gradients " + format_mib(params) + ", optimizer state " +
         format_mib(params * state_per_param) + ", activations + their gradients " + format_mib(acts) + "\n";
  out += "  total about " + format_mib(params * (2 + state_per_param) + acts) + "\n";
  return out;
}

}  // namespace ember::app
