// The tables behind apps/registries.h: optimizer.type, scheduler.type and data.transforms' types, each
// name with its factory.
#include "apps/registries.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "apps/session.h"
#include "base/format.h"
#include "optim/param_groups.h"

namespace ember::app {

namespace {

// Finds `name` in a table of entries with a `name` member; an unknown one is a ConfigError naming the
// config key and every valid name (a config read through the key table cannot hold one: its choices are
// the table's names).
template <typename Entry, size_t N>
const Entry& find_entry(const Entry (&table)[N], const char* key, const std::string& name) {
  for (const Entry& e : table)
    if (name == e.name) return e;
  std::vector<std::string> names;
  for (const Entry& e : table) names.emplace_back(e.name);
  throw ConfigError(std::string(key) + ": unknown value '" + name + "'" + did_you_mean(name, names) +
                    "; valid values: " + join(names));
}

template <typename Entry, size_t N>
std::vector<std::string> names_of(const Entry (&table)[N]) {
  std::vector<std::string> names;
  for (const Entry& e : table) names.emplace_back(e.name);
  return names;
}

// data.transforms: each type appends the loader transforms of one item, for training or for evaluation
// (the random augmentations are training-only: evaluation gets nothing, or a deterministic stand-in).
struct TransformEntry {
  const char* name;
  void (*add)(std::vector<data::AnyTransform>& out, const TransformConfig& t, bool training);
};

const TransformEntry kTransforms[] = {
    {"normalize",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool) {
       out.emplace_back(data::Normalize(std::vector<float>(t.mean.begin(), t.mean.end()),
                                        std::vector<float>(t.std.begin(), t.std.end())));
     }},
    {"random_crop",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool training) {
       if (training) out.emplace_back(data::RandomCrop(t.size, t.padding));
     }},
    {"random_horizontal_flip",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool training) {
       if (training) out.emplace_back(data::RandomHorizontalFlip(static_cast<float>(t.p)));
     }},
    {"resize",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool) {
       out.emplace_back(t.size_hw.size() == 1 ? data::Resize(t.size_hw[0]) : data::Resize(t.size_hw[0], t.size_hw[1]));
     }},
    {"center_crop",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool) {
       out.emplace_back(data::CenterCrop(t.size_hw[0], t.size_hw.back()));
     }},
    {"random_resized_crop",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool training) {
       const int64_t h = t.size_hw[0], w = t.size_hw.back();
       if (training) {
         out.emplace_back(data::RandomResizedCrop(h, w, {t.scale[0], t.scale[1]}, {t.ratio[0], t.ratio[1]}));
       } else {  // evaluation sees the same shape, deterministically: the centre of the resized image
         out.emplace_back(data::Resize(std::max(h, w)));
         out.emplace_back(data::CenterCrop(h, w));
       }
     }},
    {"color_jitter",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool training) {
       if (training)
         out.emplace_back(data::ColorJitter(static_cast<float>(t.brightness), static_cast<float>(t.contrast),
                                            static_cast<float>(t.saturation), static_cast<float>(t.hue)));
     }},
    {"random_rotation",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool training) {
       if (!training) return;
       const std::array<double, 2> range = t.degrees.size() == 1 ? std::array<double, 2>{-t.degrees[0], t.degrees[0]}
                                                                 : std::array<double, 2>{t.degrees[0], t.degrees[1]};
       out.emplace_back(data::RandomRotation(range, std::vector<float>(t.fill.begin(), t.fill.end())));
     }},
    {"grayscale",
     [](std::vector<data::AnyTransform>& out, const TransformConfig& t, bool) {
       out.emplace_back(data::Grayscale(t.num_output_channels));
     }},
};

}  // namespace

std::vector<std::string> transform_types() { return names_of(kTransforms); }

std::vector<data::AnyTransform> make_transforms(const DataConfig& d, bool training) {
  std::vector<data::AnyTransform> out;
  for (const TransformConfig& t : d.transforms) find_entry(kTransforms, "data.transforms type", t.type).add(out, t, training);
  return out;
}

namespace {

// optimizer.type: each entry builds the optimizer from its parameter groups, says which of the config's
// values its Hyper takes where another optimizer's would be (RMSprop's alpha is Hyper's beta2), and how
// many tensors of state it keeps per parameter (for the --dry-run memory estimate).
struct OptimizerEntry {
  const char* name;
  std::unique_ptr<optim::Optimizer> (*make)(std::vector<optim::ParamGroup> groups);
  void (*hyper)(optim::Hyper& h, const OptimizerConfig& o);
  double (*state_per_param)(const OptimizerConfig& o);
};

void common_hyper(optim::Hyper&, const OptimizerConfig&) {}

const OptimizerEntry kOptimizers[] = {
    {"sgd", [](std::vector<optim::ParamGroup> g) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::SGD>(std::move(g));
     },
     common_hyper, [](const OptimizerConfig& o) -> double { return o.momentum > 0 ? 1 : 0; }},
    {"adam", [](std::vector<optim::ParamGroup> g) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::Adam>(std::move(g));
     },
     common_hyper, [](const OptimizerConfig& o) -> double { return 2 + o.amsgrad; }},
    {"adamw", [](std::vector<optim::ParamGroup> g) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::AdamW>(std::move(g));
     },
     common_hyper, [](const OptimizerConfig& o) -> double { return 2 + o.amsgrad; }},
    {"rmsprop", [](std::vector<optim::ParamGroup> g) -> std::unique_ptr<optim::Optimizer> {
       return std::make_unique<optim::RMSprop>(std::move(g));
     },
     [](optim::Hyper& h, const OptimizerConfig& o) { h.beta2 = o.alpha; },
     [](const OptimizerConfig& o) -> double { return 1 + (o.momentum > 0) + o.centered; }},
};

// scheduler.type: each entry builds the schedule (nullptr: none). Lengths are in the scheduler's units:
// epochs, or steps for interval: step; `total` is the run's length in them.
struct SchedulerEntry {
  const char* name;
  std::unique_ptr<optim::LRScheduler> (*make)(const TrainConfig& c, optim::Optimizer& opt, int64_t total);
};

const SchedulerEntry kSchedulers[] = {
    {"none", [](const TrainConfig&, optim::Optimizer&, int64_t) -> std::unique_ptr<optim::LRScheduler> { return nullptr; }},
    {"step",
     [](const TrainConfig& c, optim::Optimizer& opt, int64_t) -> std::unique_ptr<optim::LRScheduler> {
       return std::make_unique<optim::StepLR>(opt, c.scheduler.step_size, c.scheduler.gamma);
     }},
    {"multistep",
     [](const TrainConfig& c, optim::Optimizer& opt, int64_t) -> std::unique_ptr<optim::LRScheduler> {
       return std::make_unique<optim::MultiStepLR>(opt, c.scheduler.milestones, c.scheduler.gamma);
     }},
    {"exponential",
     [](const TrainConfig& c, optim::Optimizer& opt, int64_t) -> std::unique_ptr<optim::LRScheduler> {
       return std::make_unique<optim::ExponentialLR>(opt, c.scheduler.gamma);
     }},
    {"cosine",
     [](const TrainConfig& c, optim::Optimizer& opt, int64_t total) -> std::unique_ptr<optim::LRScheduler> {
       const SchedulerConfig& s = c.scheduler;
       return std::make_unique<optim::CosineAnnealingLR>(
           opt, s.t_max > 0 ? s.t_max : std::max<int64_t>(1, total - s.warmup_steps), s.eta_min);
     }},
    {"onecycle",
     [](const TrainConfig& c, optim::Optimizer& opt, int64_t total) -> std::unique_ptr<optim::LRScheduler> {
       const SchedulerConfig& s = c.scheduler;
       return std::make_unique<optim::OneCycleLR>(opt, std::vector<double>{s.max_lr > 0 ? s.max_lr : c.optimizer.lr},
                                                  total, optim::OneCycleOptions{.pct_start = s.pct_start});
     }},
    {"plateau",
     [](const TrainConfig& c, optim::Optimizer& opt, int64_t) -> std::unique_ptr<optim::LRScheduler> {
       return std::make_unique<optim::ReduceLROnPlateau>(
           opt, optim::PlateauOptions{.factor = c.scheduler.factor, .patience = c.scheduler.patience});
     }},
};

}  // namespace

// One group of every parameter, or with optimizer.no_decay two (optim::weight_decay_groups: the decayed
// ones, then those of the listed kinds with weight_decay 0).
std::unique_ptr<optim::Optimizer> make_optimizer(const OptimizerConfig& o, const nn::Module& model) {
  const OptimizerEntry& entry = find_entry(kOptimizers, "optimizer.type", o.type);
  optim::Hyper h{.lr = o.lr, .weight_decay = o.weight_decay, .momentum = o.momentum, .dampening = o.dampening,
                 .nesterov = o.nesterov, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .amsgrad = o.amsgrad,
                 .centered = o.centered};
  entry.hyper(h, o);
  std::vector<optim::ParamGroup> groups;
  if (o.no_decay.empty()) {
    groups.push_back(optim::ParamGroup{model.parameters(), h, h.lr});
  } else {
    std::vector<optim::ParamKind> kinds;
    for (const std::string& k : o.no_decay) kinds.push_back(*optim::parse_param_kind(k));
    groups = optim::weight_decay_groups(model, kinds, h);
  }
  return entry.make(std::move(groups));
}

// The schedule of scheduler.type, after scheduler.warmup_steps of linear warmup when there are any.
std::unique_ptr<optim::LRScheduler> make_scheduler(const TrainConfig& c, optim::Optimizer& opt, int64_t steps_per_epoch) {
  const SchedulerConfig& s = c.scheduler;
  const int64_t total = s.interval == "step" ? c.epochs * steps_per_epoch : c.epochs;
  const SchedulerEntry& entry = find_entry(kSchedulers, "scheduler.type", s.type);
  std::unique_ptr<optim::LRScheduler> sched = entry.make(c, opt, total);
  if (sched && s.warmup_steps > 0)
    sched = std::make_unique<optim::LinearWarmup>(std::move(sched), s.warmup_steps, s.warmup_start_factor);
  return sched;
}

std::vector<std::string> optimizer_types() { return names_of(kOptimizers); }
std::vector<std::string> scheduler_types() { return names_of(kSchedulers); }

double optimizer_state_per_param(const OptimizerConfig& o) {
  return find_entry(kOptimizers, "optimizer.type", o.type).state_per_param(o);
}

}  // namespace ember::app
