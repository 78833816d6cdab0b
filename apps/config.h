#pragma once
// TrainConfig: the typed form of an ember-train YAML file (configs/fashion_mlp.yaml is a full example).
// Every key is one row of the key table (apps/config.cpp: config_fields(), transform_fields(); the row type
// is apps/config_schema.h), which drives the reading, the checks, --set, the resolved config.yaml, the
// config hash and the reference docs/config.md (`ember-train --print-config-docs`).
//
// Every key is checked: unknown keys, duplicate keys, wrong types, missing required keys and impossible
// values throw ConfigError naming the file and line (or the --set override), the key, and what was expected.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "apps/config_schema.h"
#include "apps/yaml_reader.h"
#include "base/device.h"
#include "nn/registry.h"

namespace ember::app {

struct TransformConfig {
  std::string type;
  std::vector<double> mean, std;
  int64_t size = 28, padding = 0;
  double p = 0.5;
  // The image transforms (data/image_transforms.h), with torchvision's argument names in YAML:
  std::vector<int64_t> size_hw;                  // `size` of resize, center_crop, random_resized_crop: [s] or [h, w]
  std::vector<double> scale, ratio;              // random_resized_crop
  double brightness = 0, contrast = 0, saturation = 0, hue = 0;  // color_jitter
  std::vector<double> degrees, fill;             // random_rotation
  int64_t num_output_channels = 1;               // grayscale
};

// data.tokenizer: {type: sentencepiece, ...}: the SentencePiece model to train on the corpus, or the one to use.
struct SentencePieceConfig {
  int64_t vocab_size = 4096;
  std::string model_type = "bpe";  // bpe | unigram
  std::string model_file;          // a trained .model file to use instead of training one
  double character_coverage = 1.0;
  bool byte_fallback = true;
};

struct DataConfig {
  std::string dataset = "fashion_mnist";
  std::string dir;  // fashion_mnist: the folder holding the four files
  std::string train_images, train_labels, test_images, test_labels;  // idx
  std::string train_file, test_file, target_column;                  // csv
  std::string path, tokenizer = "char";                              // text ("" path: the fortunes corpus)
  SentencePieceConfig sentencepiece;                                 // text, tokenizer: sentencepiece
  int64_t context = 128, samples_per_epoch = 0;                      // text
  double val_fraction = 0.1;                                         // text
  std::string train_dir, test_dir;                                   // image_folder ("" test_dir: a split)
  std::string channels = "auto", on_bad_file = "fail", verify = "auto";  // image_folder
  std::vector<std::string> extensions{".jpg", ".jpeg", ".png"};      // image_folder
  double split_fraction = 0.1;                                       // image_folder without test_dir
  int64_t split_seed = 0, cache_mb = 2048;                           // image_folder
  std::string root;                                                  // cifar10
  int64_t batch_size = 64, test_batch_size = 1000, workers = 2, limit = 0, test_limit = 0;
  bool shuffle = true;
  std::vector<TransformConfig> transforms;
};

struct OptimizerConfig {
  std::string type = "adam";
  double lr = 1e-3, weight_decay = 0, momentum = 0, dampening = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double alpha = 0.99, clip_grad_norm = 0;
  bool nesterov = false, amsgrad = false, centered = false;
  std::vector<std::string> no_decay;  // parameter kinds (optim/param_groups.h) trained with weight_decay 0
  int64_t accumulate_steps = 1;       // micro-batches of data.batch_size per optimizer step
};

struct SchedulerConfig {
  std::string type = "none", interval = "epoch";
  int64_t step_size = 1, t_max = 0, warmup_steps = 0, patience = 10;
  double gamma = 0.1, eta_min = 0, max_lr = 0, pct_start = 0.3, warmup_start_factor = 1.0 / 3, factor = 0.1;
  std::vector<int64_t> milestones;
};

struct OutputConfig {
  std::string dir;  // default: runs/<config file stem>
  int64_t checkpoint_every_epochs = 1, checkpoint_every_steps = 0, keep_last = 3, log_every_steps = 100;
  bool tensorboard = true;            // event files in the run directory (observe/summary_writer.h)
  int64_t histograms_every_steps = 0;  // weight and gradient histograms (0: none)
};

struct TrainConfig {
  std::string source;  // the file it was read from
  // Where each key given explicitly came from, by key path: "cfg.yaml:3" or "--set device=cuda".
  std::map<std::string, std::string> origin;
  int64_t epochs = 1;
  uint64_t seed = 0;
  std::string device = "auto";
  bool skip_nonfinite = false;
  std::string task = "classification";  // classification | language_model | regression
  DataConfig data;
  std::vector<nn::LayerSpec> model;
  std::string loss = "cross_entropy";  // cross_entropy | mse | l1 | smooth_l1 | huber
  double loss_beta = 1.0;   // smooth_l1
  double loss_delta = 1.0;  // huber
  double label_smoothing = 0;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  OutputConfig output;
  int64_t eval_every_epochs = 1;
};

// Reads `path`, applies the --set overrides ("key.path=value", in order) and checks everything. Throws
// ConfigError (unreadable file, YAML syntax error with its line, any schema error). `fashion_files` false
// skips only the check that Fashion-MNIST's files are in data.dir: ember-bench trains on synthetic batches
// of its known shape (an idx dataset's files are still checked: their headers give the shape).
TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {},
                        bool fashion_files = true);
// The same from YAML text; `name` stands for the file in messages.
TrainConfig parse_config(const std::string& text, const std::string& name, const std::vector<std::string>& overrides = {},
                         bool fashion_files = true);

// The key table: one row per key, in the order of the resolved config (apps/config_schema.h).
std::span<const schema::Field<TrainConfig>> config_fields();
std::span<const schema::Field<TransformConfig>> transform_fields();  // the items of data.transforms
std::span<const schema::Field<DataConfig>> tokenizer_fields();  // data.tokenizer as a map

// The resolved config (every key, defaults filled in) as YAML that load_config reads back to an equal config.
std::string to_yaml(const TrainConfig& config);
// A hash (16 hex digits) of everything that decides the training trajectory — all but `output` and
// `device` — stored in checkpoints so a resume with a different config is refused.
std::string config_hash(const TrainConfig& config);
// The reference of every key (docs/config.md), generated from the table: `ember-train --print-config-docs`.
std::string config_reference();

// The config's device, parsed (Device::parse: whether this build and machine can serve it). Throws
// ConfigError naming where the device was set ("cfg.yaml:3: device: ...", "--set device=cuda: device: ...").
Device config_device(const TrainConfig& config);

}  // namespace ember::app
