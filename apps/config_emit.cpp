// TrainConfig → YAML (the resolved config written to the run directory) and its hash.
#include <charconv>
#include <cstdio>

#include "apps/config.h"

namespace ember::app {
namespace {

// The shortest text that reads back to the same double.
std::string num(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

template <typename T>
void seq(YAML::Emitter& out, const std::vector<T>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (const T& v : values) {
    if constexpr (std::is_same_v<T, double>) out << num(v);
    else out << v;
  }
  out << YAML::EndSeq;
}

void emit_data(YAML::Emitter& out, const DataConfig& d) {
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "dataset" << YAML::Value << d.dataset;
  if (d.dataset == "fashion_mnist") {
    out << YAML::Key << "dir" << YAML::Value << d.dir;
  } else {
    out << YAML::Key << "train_images" << YAML::Value << d.train_images << YAML::Key << "train_labels" << YAML::Value
        << d.train_labels << YAML::Key << "test_images" << YAML::Value << d.test_images << YAML::Key
        << "test_labels" << YAML::Value << d.test_labels;
  }
  out << YAML::Key << "batch_size" << YAML::Value << d.batch_size << YAML::Key << "test_batch_size" << YAML::Value
      << d.test_batch_size << YAML::Key << "workers" << YAML::Value << d.workers << YAML::Key << "shuffle"
      << YAML::Value << d.shuffle << YAML::Key << "limit" << YAML::Value << d.limit << YAML::Key << "test_limit"
      << YAML::Value << d.test_limit;
  out << YAML::Key << "transforms" << YAML::Value << YAML::BeginSeq;
  for (const TransformConfig& t : d.transforms) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "type" << YAML::Value << t.type;
    if (t.type == "normalize") {
      out << YAML::Key << "mean" << YAML::Value;
      seq(out, t.mean);
      out << YAML::Key << "std" << YAML::Value;
      seq(out, t.std);
    } else if (t.type == "random_crop") {
      out << YAML::Key << "size" << YAML::Value << t.size << YAML::Key << "padding" << YAML::Value << t.padding;
    } else {
      out << YAML::Key << "p" << YAML::Value << num(t.p);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
}

void emit_model(YAML::Emitter& out, const std::vector<nn::LayerSpec>& model) {
  out << YAML::Key << "model" << YAML::Value << YAML::BeginSeq;
  for (const nn::LayerSpec& spec : model) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "type" << YAML::Value << spec.type;
    for (const auto& [key, value] : spec.args) {
      out << YAML::Key << key << YAML::Value;
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, double>) out << num(v);
            else if constexpr (std::is_same_v<T, std::vector<int64_t>>) seq(out, v);
            else out << v;
          },
          value);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emit(YAML::Emitter& out, const TrainConfig& c, bool with_output) {
  out << YAML::BeginMap;
  out << YAML::Key << "seed" << YAML::Value << c.seed << YAML::Key << "epochs" << YAML::Value << c.epochs;
  if (with_output) out << YAML::Key << "device" << YAML::Value << c.device;
  out << YAML::Key << "skip_nonfinite" << YAML::Value << c.skip_nonfinite;
  emit_data(out, c.data);
  emit_model(out, c.model);
  out << YAML::Key << "loss" << YAML::Value << YAML::BeginMap << YAML::Key << "type" << YAML::Value << c.loss
      << YAML::Key << "label_smoothing" << YAML::Value << num(c.label_smoothing) << YAML::EndMap;
  const OptimizerConfig& o = c.optimizer;
  out << YAML::Key << "optimizer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "type" << YAML::Value << o.type << YAML::Key << "lr" << YAML::Value << num(o.lr) << YAML::Key
      << "weight_decay" << YAML::Value << num(o.weight_decay) << YAML::Key << "momentum" << YAML::Value
      << num(o.momentum) << YAML::Key << "dampening" << YAML::Value << num(o.dampening) << YAML::Key << "nesterov"
      << YAML::Value << o.nesterov << YAML::Key << "betas" << YAML::Value;
  seq(out, std::vector<double>{o.beta1, o.beta2});
  out << YAML::Key << "eps" << YAML::Value << num(o.eps) << YAML::Key << "amsgrad" << YAML::Value << o.amsgrad
      << YAML::Key << "alpha" << YAML::Value << num(o.alpha) << YAML::Key << "centered" << YAML::Value << o.centered
      << YAML::Key << "clip_grad_norm" << YAML::Value << num(o.clip_grad_norm) << YAML::EndMap;
  const SchedulerConfig& s = c.scheduler;
  out << YAML::Key << "scheduler" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "type" << YAML::Value << s.type << YAML::Key << "interval" << YAML::Value << s.interval
      << YAML::Key << "step_size" << YAML::Value << s.step_size << YAML::Key << "gamma" << YAML::Value << num(s.gamma)
      << YAML::Key << "milestones" << YAML::Value;
  seq(out, s.milestones);
  out << YAML::Key << "t_max" << YAML::Value << s.t_max << YAML::Key << "eta_min" << YAML::Value << num(s.eta_min)
      << YAML::Key << "max_lr" << YAML::Value << num(s.max_lr) << YAML::Key << "pct_start" << YAML::Value
      << num(s.pct_start) << YAML::Key << "warmup_steps" << YAML::Value << s.warmup_steps << YAML::Key
      << "warmup_start_factor" << YAML::Value << num(s.warmup_start_factor) << YAML::Key << "factor" << YAML::Value
      << num(s.factor) << YAML::Key << "patience" << YAML::Value << s.patience << YAML::EndMap;
  if (with_output) {
    const OutputConfig& p = c.output;
    out << YAML::Key << "output" << YAML::Value << YAML::BeginMap << YAML::Key << "dir" << YAML::Value << p.dir
        << YAML::Key << "checkpoint_every_epochs" << YAML::Value << p.checkpoint_every_epochs << YAML::Key
        << "checkpoint_every_steps" << YAML::Value << p.checkpoint_every_steps << YAML::Key << "keep_last"
        << YAML::Value << p.keep_last << YAML::Key << "log_every_steps" << YAML::Value << p.log_every_steps
        << YAML::EndMap;
  }
  out << YAML::Key << "eval" << YAML::Value << YAML::BeginMap << YAML::Key << "every_epochs" << YAML::Value
      << c.eval_every_epochs << YAML::EndMap;
  out << YAML::EndMap;
}

}  // namespace

std::string to_yaml(const TrainConfig& config) {
  YAML::Emitter out;
  emit(out, config, true);
  return std::string(out.c_str()) + "\n";
}

std::string config_hash(const TrainConfig& config) {
  YAML::Emitter out;
  emit(out, config, false);
  uint64_t h = 1469598103934665603ULL;  // FNV-1a: the same on every machine and build
  for (const char* p = out.c_str(); *p != 0; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace ember::app
