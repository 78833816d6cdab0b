// The key table (one row per ember-train config key) and the checks that relate keys to each other or to
// the file system. Reading, writing, hashing and documenting the rows: apps/config_schema.h.
#include "apps/config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/registries.h"
#include "base/format.h"
#include "data/idx.h"
#include "nn/schema.h"

namespace ember::app {
namespace fs = std::filesystem;
namespace {

using schema::Kind;
using schema::Value;
using F = schema::Field<TrainConfig>;
using T = schema::Field<TransformConfig>;
using D = schema::Field<DataConfig>;

void read_transforms(Section& data, const std::string& key, TrainConfig& c);
void emit_transforms(YAML::Emitter& out, const TrainConfig& c);
std::string doc_transforms();
void read_tokenizer(Section& data, const std::string& key, TrainConfig& c);
void emit_tokenizer(YAML::Emitter& out, const TrainConfig& c);
std::string doc_tokenizer();
void read_model(Section& top, const std::string& key, TrainConfig& c);
void emit_model(YAML::Emitter& out, const TrainConfig& c);
std::string doc_model();

// clang-format off
const F kFields[] = {
  F("seed", EMBER_MEMBER(seed)).def(0).in(">= 0")
      .doc("Seeds every random choice (weight init, shuffling, dropout, augmentation): the same seed and config "
           "give the same run."),
  F("epochs", EMBER_MEMBER(epochs)).req().in(">= 1").doc("Passes over the training set."),
  F("device", EMBER_MEMBER(device)).def("auto").device().unhashed()
      .doc("Where to train: cpu, cuda, cuda:N, or auto (cuda:0 when this build and machine can use it, else cpu). "
           "The --device option overrides it."),
  F("skip_nonfinite", EMBER_MEMBER(skip_nonfinite)).def(false)
      .doc("true: a step whose loss is NaN or Inf is skipped instead of stopping the run."),
  F("task", EMBER_MEMBER(task)).def("classification").one_of({"classification", "language_model", "regression"})
      .hashed_when_set_only()
      .doc("What the model learns. classification: a class per example (cross entropy, accuracy); language_model: "
           "the next token at every position of a text window (data.dataset: text; reports validation loss in "
           "nats/token, bits per character or byte, perplexity and next-token accuracy); regression: numbers "
           "(data.dataset: csv, loss.type: mse or l1)."),

  F("data.dataset", EMBER_MEMBER(data.dataset))
      .one_of({"fashion_mnist", "idx", "csv", "text", "image_folder", "cifar10"})
      .computed([](const TrainConfig& c) -> Value { return std::string(c.task == "language_model" ? "text" : "fashion_mnist"); },
                "`fashion_mnist` (`text` for task: language_model)")
      .doc("fashion_mnist: Fashion-MNIST's four files in data.dir; idx: any four IDX files (train and test images "
           "and labels); csv: two CSV tables of numbers (data/csv.h), one example per line; text: a UTF-8 "
           "corpus cut into windows of data.context tokens (task: language_model only); image_folder: JPEG/PNG "
           "files, one subfolder per class (data.train_dir); cifar10: CIFAR-10's binary files (data.root)."),
  F("data.dir", EMBER_MEMBER(data.dir)).def(data::kFashionMnistDir).when("data.dataset", "fashion_mnist")
      .doc("The folder holding Fashion-MNIST's four files, gzipped or not (Debian's dataset-fashion-mnist installs "
           "them at the default)."),
  F("data.train_images", EMBER_MEMBER(data.train_images)).req().file().when("data.dataset", "idx")
      .doc("The IDX file of the training images."),
  F("data.train_labels", EMBER_MEMBER(data.train_labels)).req().file().when("data.dataset", "idx")
      .doc("The IDX file of the training labels."),
  F("data.test_images", EMBER_MEMBER(data.test_images)).req().file().when("data.dataset", "idx")
      .doc("The IDX file of the test images."),
  F("data.test_labels", EMBER_MEMBER(data.test_labels)).req().file().when("data.dataset", "idx")
      .doc("The IDX file of the test labels."),
  F("data.train_file", EMBER_MEMBER(data.train_file)).req().file().when("data.dataset", "csv")
      .doc("The CSV file of the training examples: every column but data.target_column is an input feature."),
  F("data.test_file", EMBER_MEMBER(data.test_file)).req().file().when("data.dataset", "csv")
      .doc("The CSV file of the test examples, with the training file's columns."),
  F("data.target_column", EMBER_MEMBER(data.target_column)).when("data.dataset", "csv")
      .computed([](const TrainConfig& c) -> Value { return std::string(c.task == "regression" ? "target" : "label"); },
                "`label` (`target` for task: regression)")
      .doc("The column to predict, by header name (or 0-based position without a header): an integer class for "
           "classification, a number for regression."),
  F("data.path", EMBER_MEMBER(data.path)).def("").when("data.dataset", "text")
      .doc("A UTF-8 text file, or a folder whose files are read in name order; empty: the fortunes corpus "
           "(/usr/share/games/fortunes, Debian's fortunes package, installed by scripts/setup.sh)."),
  F("data.tokenizer", read_tokenizer, emit_tokenizer, doc_tokenizer).default_is("`char`")
      .when("data.dataset", "text")
      .doc("char: one token per character seen in the corpus (saved as <run>/vocab.json); byte: 256 tokens, one "
           "per byte; sentencepiece, or a map `{type: sentencepiece, vocab_size: 4096, model_type: bpe}` (keys "
           "below): subword pieces, a SentencePiece model trained on the corpus or read from model_file, saved "
           "as <run>/tokenizer.model for ember-eval, ember-generate and --resume."),
  F("data.context", EMBER_MEMBER(data.context)).def(128).in(">= 1").when("data.dataset", "text")
      .doc("T: the tokens of one example; the model predicts each window's T next tokens."),
  F("data.val_fraction", EMBER_MEMBER(data.val_fraction)).def(0.1).in("in (0, 1)").when("data.dataset", "text")
      .doc("The last fraction of the token stream is the validation text (evaluated as consecutive windows)."),
  F("data.samples_per_epoch", EMBER_MEMBER(data.samples_per_epoch)).def(0).in(">= 0 (0: train tokens / context)")
      .when("data.dataset", "text")
      .doc("Training windows per epoch, at random starts in the training text (new ones every epoch, seeded)."),
  F("data.train_dir", EMBER_MEMBER(data.train_dir)).req().when("data.dataset", "image_folder")
      .doc("The folder of training images, one subfolder per class (<train_dir>/<class>/<image>.png or .jpg); the "
           "classes are the subfolder names in sorted order, saved with the run as classes.json."),
  F("data.test_dir", EMBER_MEMBER(data.test_dir)).def("").when("data.dataset", "image_folder").hashed_when_set_only()
      .doc("The folder of test images, with the same class subfolders; empty: data.split_fraction of train_dir's "
           "images, drawn with data.split_seed, are held out as the test split."),
  F("data.split_fraction", EMBER_MEMBER(data.split_fraction)).def(0.1).in("in (0, 1)")
      .when("data.dataset", "image_folder").hashed_when_set_only()
      .doc("Without data.test_dir: the fraction of train_dir's images held out for testing."),
  F("data.split_seed", EMBER_MEMBER(data.split_seed)).def(0).in(">= 0").when("data.dataset", "image_folder")
      .hashed_when_set_only()
      .doc("Without data.test_dir: seeds the draw of the held-out images (apart from seed, so that changing the "
           "training seed keeps the test split)."),
  F("data.channels", EMBER_MEMBER(data.channels)).def("auto").one_of({"auto", "1", "3"})
      .when("data.dataset", "image_folder").hashed_when_set_only()
      .doc("1: gray (as PIL's convert('L')), 3: RGB (convert('RGB')), auto: 1 when every image is stored gray, "
           "else 3."),
  F("data.extensions", EMBER_MEMBER(data.extensions)).def(std::vector<std::string>{".jpg", ".jpeg", ".png"})
      .each_of({".jpg", ".jpeg", ".png"}).when("data.dataset", "image_folder").hashed_when_set_only()
      .doc("The file endings read as images (without case); other files are ignored."),
  F("data.on_bad_file", EMBER_MEMBER(data.on_bad_file)).def("fail").one_of({"fail", "skip_with_warning"})
      .when("data.dataset", "image_folder").hashed_when_set_only()
      .doc("A file that is not a readable PNG or JPEG: fail before training starts, naming it, or leave it out "
           "with a warning."),
  F("data.verify", EMBER_MEMBER(data.verify)).def("auto").one_of({"auto", "header", "decode"})
      .when("data.dataset", "image_folder").unhashed()
      .doc("What is checked of every file before training: its header (fast), or a full decode (finds corrupt "
           "pixel data too, and fills the cache); auto: decode when every image fits data.cache_mb (the first "
           "epoch would decode them anyway), else headers."),
  F("data.cache_mb", EMBER_MEMBER(data.cache_mb)).def(2048).in(">= 0 (0: no cache)")
      .when("data.dataset", "image_folder").unhashed()
      .doc("Memory for decoded images (MiB): the images that fit are decoded once, in the first epoch, and read "
           "from memory after."),
  F("data.root", EMBER_MEMBER(data.root)).req().when("data.dataset", "cifar10")
      .doc("CIFAR-10's binary version: the cifar-10-batches-bin folder (data_batch_1..5.bin, test_batch.bin) or "
           "the folder holding it."),
  F("data.batch_size", EMBER_MEMBER(data.batch_size)).def(64).in(">= 1").doc("Examples per training step."),
  F("data.test_batch_size", EMBER_MEMBER(data.test_batch_size)).def(1000).in(">= 1")
      .doc("Examples per evaluation batch."),
  F("data.workers", EMBER_MEMBER(data.workers)).def(2).in("in [0, 64]")
      .doc("Loader threads that build batches ahead of the training loop (0: the loop builds them); the batches "
           "are the same for any number."),
  F("data.shuffle", EMBER_MEMBER(data.shuffle)).def(true).doc("Reshuffle the training set every epoch (seeded)."),
  F("data.limit", EMBER_MEMBER(data.limit)).def(0).in(">= 0 (0: all examples)")
      .doc("Train on the first N training examples only."),
  F("data.test_limit", EMBER_MEMBER(data.test_limit)).def(0).in(">= 0 (0: all examples)")
      .doc("Evaluate on the first N test examples only."),
  F("data.transforms", read_transforms, emit_transforms, doc_transforms)
      .doc("Applied in order to every example (random_crop and random_horizontal_flip: training examples only)."),

  F("model", read_model, emit_model, doc_model).req()
      .doc("the layers in order, e.g. `- {type: linear, out_features: 10}`; input sizes are inferred from the data"),

  F("loss.type", EMBER_MEMBER(loss)).one_of({"cross_entropy", "mse", "l1", "smooth_l1", "huber"})
      .computed([](const TrainConfig& c) -> Value { return std::string(c.task == "regression" ? "mse" : "cross_entropy"); },
                "`cross_entropy` (`mse` for task: regression)")
      .doc("The loss function: cross_entropy for classification and language_model (over every token of the "
           "window); mse, l1, smooth_l1 or huber (mean over the targets' elements) for regression."),
  F("loss.beta", EMBER_MEMBER(loss_beta)).def(1.0).in(">= 0").when("loss.type", "smooth_l1")
      .doc("Where smooth_l1 turns from quadratic (0.5·z²/beta) to linear (z - 0.5·beta); 0 gives l1."),
  F("loss.delta", EMBER_MEMBER(loss_delta)).def(1.0).in("> 0").when("loss.type", "huber")
      .doc("Where huber turns from quadratic (0.5·z²) to linear (delta·(z - 0.5·delta))."),
  F("loss.label_smoothing", EMBER_MEMBER(label_smoothing)).def(0).in("in [0, 1)")
      .doc("Moves this much of the target's probability mass evenly onto all classes."),

  F("optimizer.type", EMBER_MEMBER(optimizer.type)).def("adam").one_of(optimizer_types())
      .doc("The optimizer."),
  F("optimizer.lr", EMBER_MEMBER(optimizer.lr)).req().in("> 0").doc("The learning rate (a scheduler scales it)."),
  F("optimizer.weight_decay", EMBER_MEMBER(optimizer.weight_decay)).in(">= 0")
      .computed([](const TrainConfig& c) -> Value { return c.optimizer.type == "adamw" ? 1e-2 : 0.0; },
                "`0` (`0.01` for adamw)")
      .doc("L2 penalty; adamw decays the weights directly (decoupled)."),
  F("optimizer.momentum", EMBER_MEMBER(optimizer.momentum)).def(0).in("in [0, 1)").doc("sgd and rmsprop."),
  F("optimizer.dampening", EMBER_MEMBER(optimizer.dampening)).def(0).in("in [0, 1]").doc("sgd's momentum dampening."),
  F("optimizer.nesterov", EMBER_MEMBER(optimizer.nesterov)).def(false)
      .doc("sgd's Nesterov momentum (needs type: sgd and momentum > 0)."),
  F("optimizer.betas", Kind::numbers,
    [](const TrainConfig& c) -> Value { return std::vector<double>{c.optimizer.beta1, c.optimizer.beta2}; },
    [](TrainConfig& c, Value v) {
      const auto& betas = std::get<std::vector<double>>(v);
      c.optimizer.beta1 = betas[0];
      c.optimizer.beta2 = betas[1];
    }).def(std::vector<double>{0.9, 0.999}).items(2).in("in [0, 1)")
      .doc("adam and adamw: the decay rates of the first and second moment estimates."),
  F("optimizer.eps", EMBER_MEMBER(optimizer.eps)).def(1e-8).in("> 0")
      .doc("adam, adamw and rmsprop: added to the denominator."),
  F("optimizer.amsgrad", EMBER_MEMBER(optimizer.amsgrad)).def(false).doc("adam and adamw: the AMSGrad variant."),
  F("optimizer.alpha", EMBER_MEMBER(optimizer.alpha)).def(0.99).in("in [0, 1)")
      .doc("rmsprop: the decay rate of the squared-gradient average."),
  F("optimizer.centered", EMBER_MEMBER(optimizer.centered)).def(false)
      .doc("rmsprop: normalize by the gradient's estimated variance."),
  F("optimizer.clip_grad_norm", EMBER_MEMBER(optimizer.clip_grad_norm)).def(0).in(">= 0 (0: no clipping)")
      .doc("Scales the gradients down when their global L2 norm exceeds this."),
  F("optimizer.no_decay", EMBER_MEMBER(optimizer.no_decay)).def(std::vector<std::string>{}).hashed_when_set_only()
      .each_of({"bias", "norm", "embedding"})
      .doc("Parameter kinds trained with weight_decay 0 (a second parameter group): bias: parameters named bias, "
           "bias_* or *_bias; norm: every parameter of a LayerNorm/BatchNorm/GroupNorm; embedding: every parameter "
           "of an embedding (token or position). The rest keep optimizer.weight_decay."),
  F("optimizer.accumulate_steps", EMBER_MEMBER(optimizer.accumulate_steps)).def(1).in(">= 1").hashed_when_set_only()
      .doc("Gradient accumulation: one optimizer step (and clipping, and a per-step scheduler step) per N "
           "micro-batches of data.batch_size, each micro-batch's loss weighted so the update equals one batch of "
           "N × batch_size examples. Steps, checkpoints and metrics count optimizer steps."),

  F("scheduler.type", EMBER_MEMBER(scheduler.type)).def("none").one_of(scheduler_types())
      .doc("How the learning rate changes over the run."),
  F("scheduler.interval", EMBER_MEMBER(scheduler.interval)).one_of({"epoch", "step"})
      .computed([](const TrainConfig& c) -> Value {
                  return std::string(c.scheduler.type == "onecycle" ? "step" : "epoch");
                },
                "`epoch` (`step` for onecycle)")
      .doc("Step the scheduler after every epoch or every batch (onecycle needs step, plateau epoch)."),
  F("scheduler.step_size", EMBER_MEMBER(scheduler.step_size)).def(1).in(">= 1")
      .doc("step: intervals between decays by gamma."),
  F("scheduler.gamma", EMBER_MEMBER(scheduler.gamma)).def(0.1).in("> 0")
      .doc("step, multistep, exponential: the decay factor."),
  F("scheduler.milestones", EMBER_MEMBER(scheduler.milestones)).def(std::vector<int64_t>{})
      .doc("multistep (required there): the intervals at which the rate decays by gamma."),
  F("scheduler.t_max", EMBER_MEMBER(scheduler.t_max)).def(0).in(">= 0 (0: the whole run)")
      .doc("cosine: the intervals of one half-period."),
  F("scheduler.eta_min", EMBER_MEMBER(scheduler.eta_min)).def(0).in(">= 0").doc("cosine: the lowest rate."),
  F("scheduler.max_lr", EMBER_MEMBER(scheduler.max_lr)).def(0).in(">= 0 (0: optimizer.lr)")
      .doc("onecycle: the peak rate."),
  F("scheduler.pct_start", EMBER_MEMBER(scheduler.pct_start)).def(0.3).in("in (0, 1)")
      .doc("onecycle: the fraction of the run spent rising to max_lr."),
  F("scheduler.warmup_steps", EMBER_MEMBER(scheduler.warmup_steps)).def(0).in(">= 0")
      .doc("Intervals of linear warmup before the schedule (not with onecycle or plateau)."),
  F("scheduler.warmup_start_factor", EMBER_MEMBER(scheduler.warmup_start_factor)).def(1.0 / 3).in("in (0, 1]")
      .doc("The fraction of the rate the warmup starts from."),
  F("scheduler.factor", EMBER_MEMBER(scheduler.factor)).def(0.1).in("in (0, 1)")
      .doc("plateau: the decay factor when the test loss stops improving."),
  F("scheduler.patience", EMBER_MEMBER(scheduler.patience)).def(10).in(">= 0")
      .doc("plateau: epochs without improvement before a decay."),

  F("output.dir", EMBER_MEMBER(output.dir)).unhashed()
      .computed([](const TrainConfig& c) -> Value { return "runs/" + fs::path(c.source).stem().string(); },
                "`runs/<config file name without .yaml>`")
      .doc("The run directory: config.yaml, metrics, checkpoints. --out (or --resume) overrides it."),
  F("output.checkpoint_every_epochs", EMBER_MEMBER(output.checkpoint_every_epochs)).def(1).unhashed()
      .in(">= 0 (0: off)").doc("Write a checkpoint every N epochs."),
  F("output.checkpoint_every_steps", EMBER_MEMBER(output.checkpoint_every_steps)).def(0).unhashed()
      .in(">= 0 (0: off)").doc("Write a checkpoint every N steps."),
  F("output.keep_last", EMBER_MEMBER(output.keep_last)).def(3).unhashed().in(">= 1")
      .doc("Checkpoints kept; older ones are deleted."),
  F("output.log_every_steps", EMBER_MEMBER(output.log_every_steps)).def(100).unhashed().in(">= 1")
      .doc("Log the running loss every N steps."),
  F("output.tensorboard", EMBER_MEMBER(output.tensorboard)).def(true).unhashed()
      .doc("Write TensorBoard event files into the run directory (`tensorboard --logdir runs`): train loss, lr, "
           "samples/s and memory every log_every_steps, every epoch metric per epoch."),
  F("output.histograms_every_steps", EMBER_MEMBER(output.histograms_every_steps)).def(0).unhashed()
      .in(">= 0 (0: off)").doc("With output.tensorboard: histograms of every weight and gradient every N steps."),

  F("eval.every_epochs", EMBER_MEMBER(eval_every_epochs)).def(1).in(">= 0 (0: never)")
      .doc("Evaluate on the test set every N epochs (plateau needs 1)."),
};

// The items of data.transforms: `type` decides which other keys apply.
const T kTransformFields[] = {
  T("type", EMBER_MEMBER(type)).req().one_of(transform_types())
      .doc("What the transform does."),
  T("mean", EMBER_MEMBER(mean)).req().when("type", "normalize")
      .doc("Subtracted per channel (one number: every channel)."),
  T("std", EMBER_MEMBER(std)).req().in("> 0").when("type", "normalize")
      .doc("Divides per channel after the mean; as many as mean."),
  T("size", EMBER_MEMBER(size)).req().in(">= 1").when("type", "random_crop")
      .doc("The side of the square cropped at a random place of the padded image."),
  T("padding", EMBER_MEMBER(padding)).def(0).in(">= 0").when("type", "random_crop")
      .doc("Zeros added on each side before cropping."),
  T("p", EMBER_MEMBER(p)).def(0.5).in("in [0, 1]").when("type", "random_horizontal_flip")
      .doc("The probability that a training example is flipped left-right."),
  // The image transforms (torchvision's, data/image_transforms.h); `size` has one row per type.
  T("size", EMBER_MEMBER(size_hw)).req().in(">= 1").when("type", "resize")
      .doc("One number: the shorter side becomes it, the aspect ratio kept; two: [height, width]. Bilinear, "
           "antialiased when shrinking, as torchvision's Resize."),
  T("size", EMBER_MEMBER(size_hw)).req().in(">= 1").when("type", "center_crop")
      .doc("[height, width] of the central window, or one number for a square; smaller images are padded with 0."),
  T("size", EMBER_MEMBER(size_hw)).req().in(">= 1").when("type", "random_resized_crop")
      .doc("[height, width] of the output, or one number for a square. Training only: evaluation resizes the "
           "shorter side to the larger of the two, then takes the central window of this size."),
  T("scale", EMBER_MEMBER(scale)).def(std::vector<double>{0.08, 1.0}).items(2).in("> 0")
      .when("type", "random_resized_crop")
      .doc("[min, max] fraction of the image's area that the random window covers."),
  T("ratio", EMBER_MEMBER(ratio)).def(std::vector<double>{3.0 / 4.0, 4.0 / 3.0}).items(2).in("> 0")
      .when("type", "random_resized_crop")
      .doc("[min, max] aspect ratio (width / height) of the window, drawn log-uniformly."),
  T("brightness", EMBER_MEMBER(brightness)).def(0.0).in(">= 0").when("type", "color_jitter")
      .doc("Brightness factor uniform in [max(0, 1 - b), 1 + b] (0: unchanged). The four adjustments run in a "
           "random order; training only."),
  T("contrast", EMBER_MEMBER(contrast)).def(0.0).in(">= 0").when("type", "color_jitter")
      .doc("Contrast factor uniform in [max(0, 1 - c), 1 + c], about the grayscale mean (0: unchanged)."),
  T("saturation", EMBER_MEMBER(saturation)).def(0.0).in(">= 0").when("type", "color_jitter")
      .doc("Saturation factor uniform in [max(0, 1 - s), 1 + s] (0: unchanged)."),
  T("hue", EMBER_MEMBER(hue)).def(0.0).in("in [0, 0.5]").when("type", "color_jitter")
      .doc("Hue shift uniform in [-hue, hue], in turns of the colour wheel (0: unchanged)."),
  T("degrees", EMBER_MEMBER(degrees)).req().when("type", "random_rotation")
      .doc("One number d >= 0: an angle uniform in [-d, d]; two: [min, max]. Counter-clockwise about the centre, "
           "nearest neighbour, same size; training only."),
  T("fill", EMBER_MEMBER(fill)).def(std::vector<double>{0.0}).when("type", "random_rotation")
      .doc("The value of the corners rotated in from outside, in the input's units (0.5: mid grey); one per "
           "channel, or one for all."),
  T("num_output_channels", EMBER_MEMBER(num_output_channels)).def(1).in("in [1, 3] (1 or 3)")
      .when("type", "grayscale")
      .doc("1, or 3 (the luma repeated, for a model built for RGB). ITU-R 601-2 luma, as PIL's convert('L')."),
};
// data.tokenizer as a map: `type` and, for sentencepiece, the model to train (or the file to use).
const D kTokenizerFields[] = {
  D("type", EMBER_MEMBER(tokenizer)).req().one_of({"char", "byte", "sentencepiece"})
      .doc("The tokenizer (char and byte take no other key)."),
  D("vocab_size", EMBER_MEMBER(sentencepiece.vocab_size)).def(4096).in(">= 1").when("type", "sentencepiece")
      .doc("The pieces to train, including <unk> and, with byte_fallback, the 256 byte pieces; at least the "
           "corpus's distinct characters (times character_coverage) plus those."),
  D("model_type", EMBER_MEMBER(sentencepiece.model_type)).def("bpe").one_of({"bpe", "unigram"})
      .when("type", "sentencepiece")
      .doc("SentencePiece's algorithm: bpe (merges, as GPT-2 and Llama) or unigram (a unigram language model over "
           "pieces, as T5)."),
  D("model_file", EMBER_MEMBER(sentencepiece.model_file)).def("").when("type", "sentencepiece")
      .doc("A trained SentencePiece .model file (e.g. a Llama-2 or T5 tokenizer.model) to use instead of "
           "training one; then the training keys are not given."),
  D("character_coverage", EMBER_MEMBER(sentencepiece.character_coverage)).def(1.0).in("in (0, 1]")
      .when("type", "sentencepiece")
      .doc("The share of the corpus's characters that get a piece of their own; the rarest others become byte "
           "pieces (byte_fallback) or <unk>."),
  D("byte_fallback", EMBER_MEMBER(sentencepiece.byte_fallback)).def(true).when("type", "sentencepiece")
      .doc("A character without a piece is encoded as its UTF-8 bytes (256 byte pieces), so any text encodes and "
           "decodes exactly; false: it becomes <unk>."),
};
// clang-format on

// data.tokenizer: a name (char, byte, sentencepiece with the default keys), or a map read through
// kTokenizerFields. A model_file is used as it is: the keys that train a model are refused with it.
void read_tokenizer(Section& data, const std::string& key, TrainConfig& c) {
  if (!data.has(key)) return;
  const YAML::Node node = data.node(key);
  c.origin[data.key_path(key)] = data.origins().where(data.key_path(key), node);
  if (!node.IsMap()) {
    c.data.tokenizer = data.choice(key, "char", tokenizer_fields()[0].choices);
    return;
  }
  Section spec(node, data.key_path(key), data.origins());
  schema::read_fields(tokenizer_fields(), spec, c.data);
  // (The file is opened by a new run only: a run's own copy serves ember-eval, ember-generate and --resume.)
  if (c.data.sentencepiece.model_file.empty()) return;
  for (const char* training : {"vocab_size", "model_type", "character_coverage", "byte_fallback"})
    if (spec.has(training))
      spec.fail(training, std::string("trains a model, but model_file gives one (whose ") + training +
                              " it keeps): remove one of them");
}

void emit_tokenizer(YAML::Emitter& out, const TrainConfig& c) {
  if (c.data.tokenizer != "sentencepiece") {
    out << c.data.tokenizer;  // as before maps were read: the hash of a char or byte run is unchanged
    return;
  }
  out << YAML::Flow;
  const std::string& file = c.data.sentencepiece.model_file;
  if (file.empty()) {
    schema::emit_fields(out, tokenizer_fields(), c.data, true);
  } else {  // without the training keys, which a model file does not take
    out << YAML::BeginMap << YAML::Key << "type" << YAML::Value << c.data.tokenizer << YAML::Key << "model_file"
        << YAML::Value << file << YAML::EndMap;
  }
}

std::string doc_tokenizer() {
  return "A name (`char`, `byte`, `sentencepiece`) or a map of these keys:\n\n" +
         schema::describe(schema::keys_of(tokenizer_fields()));
}

// data.transforms: a list of maps, each read through kTransformFields.
void read_transforms(Section& data, const std::string& key, TrainConfig& c) {
  if (!data.has(key)) return;
  const YAML::Node list = data.node(key);
  if (!list.IsSequence()) data.fail(key, "expected a list of transforms");
  for (size_t i = 0; i < list.size(); ++i) {
    Section item(list[i], data.key_path(key) + "[" + std::to_string(i) + "]", data.origins());
    TransformConfig t;
    schema::read_fields(transform_fields(), item, t);
    if (t.type == "normalize" && (t.mean.empty() || t.mean.size() != t.std.size()))
      item.fail("std", "normalize needs 'mean' and 'std' lists of the same non-zero length");
    if ((t.type == "resize" || t.type == "center_crop" || t.type == "random_resized_crop") &&
        (t.size_hw.empty() || t.size_hw.size() > 2))
      item.fail("size", "expected one number or [height, width]");
    if (t.type == "random_resized_crop" && t.scale[0] > t.scale[1]) item.fail("scale", "expected [min, max] with min <= max");
    if (t.type == "random_resized_crop" && t.ratio[0] > t.ratio[1]) item.fail("ratio", "expected [min, max] with min <= max");
    if (t.type == "random_rotation" && (t.degrees.empty() || t.degrees.size() > 2 ||
                                        (t.degrees.size() == 1 ? t.degrees[0] < 0 : t.degrees[0] > t.degrees[1])))
      item.fail("degrees", "expected one number d >= 0 (an angle in [-d, d]) or [min, max] with min <= max");
    if (t.type == "random_rotation" && t.fill.empty()) item.fail("fill", "expected one value per channel, or one for all");
    if (t.type == "grayscale" && t.num_output_channels == 2) item.fail("num_output_channels", "expected 1 or 3");
    c.data.transforms.push_back(t);
  }
}

void emit_transforms(YAML::Emitter& out, const TrainConfig& c) {
  out << YAML::BeginSeq;
  for (const TransformConfig& t : c.data.transforms) {
    out << YAML::Flow;
    schema::emit_fields(out, transform_fields(), t, true);
  }
  out << YAML::EndSeq;
}

nn::SpecValue spec_value(const Section& layer, const std::string& key, const YAML::Node& n) {
  if (n.IsScalar()) {
    const std::string& t = n.Scalar();
    if (const auto i = parse_int(t)) return *i;
    if (const auto b = parse_bool(t)) return *b;
    if (const auto d = parse_number(t)) return *d;
    return t;
  }
  if (n.IsSequence()) {
    std::vector<int64_t> out;
    for (const auto& item : n) {
      const auto i = item.IsScalar() ? parse_int(item.Scalar()) : std::nullopt;
      if (!i) layer.fail(key, "expected a list of integers");
      out.push_back(*i);
    }
    return out;
  }
  layer.fail(key, "expected a number, true/false, a string or a list of integers");
}

// model: a list of layer specs whose keys the layer registry (nn/registry.h) describes, or one mapping for a
// whole model ({type: gpt, ...}), read as a list of that one spec.
void read_model(Section& top, const std::string& key, TrainConfig& c) {
  const Origins& origins = top.origins();
  const YAML::Node node = top.node(key);
  const auto read_spec = [&](const YAML::Node& item, const std::string& path, const std::string& origin_key) {
    Section layer(item, path, origins);
    nn::LayerSpec spec;
    spec.where = origins.where(origin_key, item) + ": " + path;
    spec.type = layer.choice("type", "", nn::layer_types());
    std::vector<std::string> keys = nn::layer_keys(spec.type);
    for (const auto& kv : item) {
      const std::string name = kv.first.Scalar();
      if (name == "type") continue;
      if (std::find(keys.begin(), keys.end(), name) == keys.end()) {
        // in_features, in_channels, ...: say that the registry infers them, not just "unknown key"
        if (const std::string why = nn::inferred_key_message(spec.type, name); !why.empty())
          throw ConfigError(spec.where + " (" + spec.type + "): " + why);
        keys.insert(keys.begin(), "type");
        layer.reject_unknown(keys);
      }
      spec.args.emplace_back(name, spec_value(layer, name, kv.second));
    }
    c.model.push_back(std::move(spec));
  };
  if (node.IsMap()) {
    read_spec(node, "model", "model");
    if (!nn::is_whole_model(c.model.back().type))
      throw ConfigError(c.model.back().where + " (" + c.model.back().type + "): " + c.model.back().type +
                        " is a layer; a model of layers is a list (model: [{type: " + c.model.back().type +
                        ", ...}, ...]); a mapping names a whole model");
    return;
  }
  if (!node.IsSequence() || node.size() == 0)
    throw ConfigError(origins.where("model", node) +
                      ": model: expected a non-empty list of layer specs, or one whole model ({type: gpt, ...})");
  for (size_t i = 0; i < node.size(); ++i)
    read_spec(node[i], "model[" + std::to_string(i) + "]", "model." + std::to_string(i));
}

void emit_model(YAML::Emitter& out, const TrainConfig& c) {
  const bool whole = c.model.size() == 1 && nn::is_whole_model(c.model[0].type);  // written as it is read: a mapping
  if (!whole) out << YAML::BeginSeq;
  for (const nn::LayerSpec& spec : c.model) {
    if (!whole) out << YAML::Flow;
    out << YAML::BeginMap << YAML::Key << "type" << YAML::Value << spec.type;
    for (const auto& [key, value] : spec.args) {
      out << YAML::Key << key << YAML::Value;
      std::visit(
          [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, double>) out << format_shortest(v);
            else if constexpr (std::is_same_v<V, std::vector<int64_t>>) schema::emit_value(out, Kind::integers, v);
            else out << v;
          },
          value);
    }
    out << YAML::EndMap;
  }
  if (!whole) out << YAML::EndSeq;
}

std::string doc_transforms() { return schema::describe(schema::keys_of(transform_fields())); }

// Every layer type's keys, from the registry's rows (nn/registry.h), as the config's keys are documented.
std::string doc_model() {
  std::string out = "Each item is a map of `type` and that type's keys. Input sizes (in_features, in_channels, "
                    "num_features, ...) are not keys: they are inferred from the layer before. The keys of each type:\n";
  std::vector<std::string> bare;  // the types without keys
  for (const std::string& type : nn::layer_types()) {
    const std::vector<const schema::Key*> keys = nn::layer_key_rows(type);
    if (keys.empty()) bare.push_back("`" + type + "`");
    else out += "\n#### `" + type + "`\n\n" + schema::describe(keys);
  }
  if (!bare.empty()) out += "\nNo keys: " + join(bare) + ".\n";
  std::vector<std::string> whole;
  for (const std::string& type : nn::layer_types())
    if (nn::is_whole_model(type)) whole.push_back("`" + type + "`");
  if (!whole.empty())
    out += "\nWhole models (" + join(whole) + ") are given as one mapping instead of a list: `model: {type: " +
           whole.front().substr(1, whole.front().size() - 2) + ", ...}`.\n";
  return out;
}

// Fashion-MNIST's four files, gzipped or not, must be in `dir`.
void check_fashion_dir(Section& data, const std::string& dir) {
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"}) {
    const fs::path p = fs::path(dir) / name;
    if (!fs::is_regular_file(p) && !fs::is_regular_file(p.string() + ".gz"))
      data.fail("dir", "the dataset file '" + p.string() + "[.gz]' does not exist; install Debian's "
                       "dataset-fashion-mnist (scripts/setup.sh does) or point data.dir at a folder holding the files");
  }
}

// What no single row can say: keys that constrain each other, and the dataset's files.
void check_relations(Section& top, const TrainConfig& c, bool fashion_files) {
  Section data = top.section("data"), optimizer = top.section("optimizer"), scheduler = top.section("scheduler");
  if (c.data.dataset == "fashion_mnist" && fashion_files) check_fashion_dir(data, c.data.dir);
  Section loss = top.section("loss");
  const bool text = c.data.dataset == "text", lm = c.task == "language_model";
  if (text && !lm) data.fail("dataset", "text data trains a language model: set task: language_model");
  if (lm && !text)
    top.fail("task", "language_model trains on text: set data.dataset: text (and data.path, or leave it empty for "
                     "the fortunes corpus)");
  if (c.task == "regression" && c.data.dataset != "csv")
    top.fail("task", "regression trains on CSV tables: set data.dataset: csv with data.train_file, data.test_file "
                     "and data.target_column");
  if (c.task == "regression" && c.loss == "cross_entropy")
    loss.fail("type", "regression needs mse, l1, smooth_l1 or huber");
  if (c.task != "regression" && c.loss != "cross_entropy")
    loss.fail("type", c.loss + " is a regression loss; task " + c.task + " needs cross_entropy (or set task: regression)");
  if (c.task == "regression" && c.label_smoothing > 0) loss.fail("label_smoothing", "only applies to cross_entropy");
  if (text && !c.data.transforms.empty())
    data.fail("transforms", "the transforms are for images; text data takes none");
  if (c.data.dataset == "image_folder") {
    if (!fs::is_directory(c.data.train_dir))
      data.fail("train_dir", "'" + c.data.train_dir + "' is not a folder; give the folder that holds one subfolder "
                             "of images per class");
    if (!c.data.test_dir.empty() && !fs::is_directory(c.data.test_dir))
      data.fail("test_dir", "'" + c.data.test_dir + "' is not a folder; give the test images' folder (one subfolder "
                            "per class), or leave it empty to hold out data.split_fraction of train_dir");
  }
  if (c.data.dataset == "cifar10" && !fs::is_directory(c.data.root))
    data.fail("root", "'" + c.data.root + "' is not a folder; give CIFAR-10's cifar-10-batches-bin folder (from "
                      "cifar-10-binary.tar.gz) or the folder holding it");
  if (text && !c.data.path.empty() && !fs::exists(c.data.path))
    data.fail("path", "'" + c.data.path + "' does not exist; give a UTF-8 text file or a folder of them, or leave it "
                      "empty for the fortunes corpus");
  const OptimizerConfig& o = c.optimizer;
  if (!o.no_decay.empty() && o.weight_decay == 0)
    optimizer.fail("no_decay", "has no effect with weight_decay 0: set optimizer.weight_decay, or remove no_decay");
  if (o.nesterov && (o.type != "sgd" || o.momentum <= 0)) optimizer.fail("nesterov", "needs type: sgd and momentum > 0");
  const SchedulerConfig& s = c.scheduler;
  if (s.type == "multistep" && s.milestones.empty()) scheduler.fail("milestones", "multistep needs a list of milestones");
  if (s.type == "onecycle" && s.interval != "step") scheduler.fail("interval", "onecycle steps every batch: use interval: step");
  if (s.type == "plateau" && s.interval != "epoch")
    scheduler.fail("interval", "plateau steps on the test loss: use interval: epoch");
  if (s.warmup_steps > 0 && (s.type == "plateau" || s.type == "onecycle"))
    scheduler.fail("warmup_steps", "warmup cannot precede a " + s.type + " scheduler");
  if (s.type == "plateau" && c.eval_every_epochs != 1)
    scheduler.fail("type", "plateau steps on the test loss, which needs eval.every_epochs: 1");
}

}  // namespace

std::span<const schema::Field<TrainConfig>> config_fields() { return kFields; }
std::span<const schema::Field<TransformConfig>> transform_fields() { return kTransformFields; }
std::span<const schema::Field<DataConfig>> tokenizer_fields() { return kTokenizerFields; }

TrainConfig parse_config(const std::string& text, const std::string& name, const std::vector<std::string>& overrides,
                         bool fashion_files) {
  Origins origins{name, {}};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(name + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
  reject_duplicate_keys(root, name);
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  for (const std::string& o : overrides) apply_override(root, o, origins);

  Section top(root, "", origins);
  TrainConfig c;
  c.source = name;
  schema::read_fields(config_fields(), top, c, &c.origin);
  check_relations(top, c, fashion_files);
  return c;
}

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides, bool fashion_files) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot read the config file (" + (fs::exists(path) ? "permission denied" : "no such file") + ")");
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path, overrides, fashion_files);
}

Device config_device(const TrainConfig& config) {
  try {
    return Device::parse(config.device);
  } catch (const Error& e) {
    const auto it = config.origin.find("device");
    throw ConfigError((it != config.origin.end() ? it->second : config.source) + ": device: " + e.what() +
                      " (device: cpu works on every machine)");
  }
}

}  // namespace ember::app
