#include "apps/session.h"

#include <algorithm>
#include <numeric>

#include "backends/format.h"

namespace ember::app {
namespace {

data::DatasetPtr limited(std::shared_ptr<data::IdxDataset> set, int64_t limit) {
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

std::vector<data::AnyTransform> transforms(const DataConfig& d, bool training) {
  std::vector<data::AnyTransform> out;
  for (const TransformConfig& t : d.transforms) {
    if (t.type == "normalize") {
      out.emplace_back(data::Normalize(std::vector<float>(t.mean.begin(), t.mean.end()),
                                       std::vector<float>(t.std.begin(), t.std.end())));
    } else if (training && t.type == "random_crop") {  // augmentation: training split only
      out.emplace_back(data::RandomCrop(t.size, t.padding));
    } else if (training && t.type == "random_horizontal_flip") {
      out.emplace_back(data::RandomHorizontalFlip(static_cast<float>(t.p)));
    }
  }
  return out;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const OptimizerConfig& o, std::vector<Tensor> params) {
  if (o.type == "sgd")
    return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = o.lr, .momentum = o.momentum,
        .dampening = o.dampening, .weight_decay = o.weight_decay, .nesterov = o.nesterov});
  if (o.type == "adam")
    return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions{.lr = o.lr, .beta1 = o.beta1,
        .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay, .amsgrad = o.amsgrad});
  if (o.type == "adamw")
    return std::make_unique<optim::AdamW>(std::move(params), optim::AdamWOptions{.lr = o.lr, .beta1 = o.beta1,
        .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay, .amsgrad = o.amsgrad});
  return std::make_unique<optim::RMSprop>(std::move(params), optim::RMSpropOptions{.lr = o.lr, .alpha = o.alpha,
      .eps = o.eps, .weight_decay = o.weight_decay, .momentum = o.momentum, .centered = o.centered});
}

// Lengths are in the scheduler's units: epochs, or steps for interval: step.
std::unique_ptr<optim::LRScheduler> make_scheduler(const TrainConfig& c, optim::Optimizer& opt, int64_t steps_per_epoch) {
  const SchedulerConfig& s = c.scheduler;
  const int64_t total = s.interval == "step" ? c.epochs * steps_per_epoch : c.epochs;
  std::unique_ptr<optim::LRScheduler> sched;
  if (s.type == "none") return nullptr;
  if (s.type == "step") sched = std::make_unique<optim::StepLR>(opt, s.step_size, s.gamma);
  if (s.type == "multistep") sched = std::make_unique<optim::MultiStepLR>(opt, s.milestones, s.gamma);
  if (s.type == "exponential") sched = std::make_unique<optim::ExponentialLR>(opt, s.gamma);
  if (s.type == "cosine")
    sched = std::make_unique<optim::CosineAnnealingLR>(opt, s.t_max > 0 ? s.t_max : std::max<int64_t>(1, total - s.warmup_steps),
                                                       s.eta_min);
  if (s.type == "onecycle")
    sched = std::make_unique<optim::OneCycleLR>(opt, std::vector<double>{s.max_lr > 0 ? s.max_lr : c.optimizer.lr}, total,
                                                optim::OneCycleOptions{.pct_start = s.pct_start});
  if (s.type == "plateau")
    sched = std::make_unique<optim::ReduceLROnPlateau>(opt, optim::PlateauOptions{.factor = s.factor, .patience = s.patience});
  if (s.warmup_steps > 0)
    sched = std::make_unique<optim::LinearWarmup>(std::move(sched), s.warmup_steps, s.warmup_start_factor);
  return sched;
}

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
  if (for_training) {
    s.optimizer = make_optimizer(s.config.optimizer, s.model->parameters());
    s.scheduler = make_scheduler(s.config, *s.optimizer, s.steps_per_epoch);
  }
}

}  // namespace

TrainShape train_shape(const TrainConfig& config) {
  const DataConfig& d = config.data;
  Shape shape{1, 28, 28};
  int64_t size = 60000;  // Fashion-MNIST's training split
  if (d.dataset != "fashion_mnist") {
    const auto train = open_split(d, data::Split::Train);
    shape = train->spec().input_shape;
    size = train->size();
  }
  for (const data::AnyTransform& t : transforms(d, true)) shape = t->output_shape(shape);
  if (d.limit > 0) size = std::min(size, d.limit);
  return {shape, (size + d.batch_size - 1) / d.batch_size};  // the loader keeps the last partial batch
}

std::unique_ptr<Session> make_model_session(const TrainConfig& config, Device device, const TrainShape& shape) {
  auto s = std::make_unique<Session>();
  s->config = config;
  s->device = device;
  manual_seed(config.seed);
  s->sample_shape = shape.sample_shape;
  s->steps_per_epoch = shape.steps_per_epoch;
  build_model(*s, true);
  return s;
}

namespace {
bool per_step_schedule(const Session& s) { return s.scheduler && s.config.scheduler.interval == "step"; }
}  // namespace

void apply_update(Session& s, const Tensor& loss) {
  loss.backward();
  if (s.config.optimizer.clip_grad_norm > 0) optim::clip_grad_norm_(s.model->parameters(), s.config.optimizer.clip_grad_norm);
  s.optimizer->step();
  if (per_step_schedule(s)) s.scheduler->step();
}

void end_epoch_schedule(Session& s, double metric) {
  if (!s.scheduler || per_step_schedule(s)) return;
  if (auto* plateau = dynamic_cast<optim::ReduceLROnPlateau*>(s.scheduler.get())) plateau->step(metric);
  else s.scheduler->step();
}

std::unique_ptr<Session> make_session(const TrainConfig& config, Device device, bool for_training) {
  auto s = std::make_unique<Session>();
  s->config = config;
  s->device = device;
  manual_seed(config.seed);
  const DataConfig& d = config.data;
  s->test_set = limited(open_split(d, data::Split::Test), d.test_limit);
  s->test_loader = std::make_unique<data::DataLoader>(
      s->test_set, data::DataLoaderOptions{.batch_size = d.test_batch_size, .num_workers = static_cast<int>(d.workers),
                                           .transforms = transforms(d, false), .pin_memory = device.is_cuda()});
  if (for_training) {
    s->train_set = limited(open_split(d, data::Split::Train), d.limit);
    s->train_loader = std::make_unique<data::DataLoader>(
        s->train_set, data::DataLoaderOptions{.batch_size = d.batch_size, .shuffle = d.shuffle,
                                              .num_workers = static_cast<int>(d.workers), .seed = config.seed,
                                              .transforms = transforms(d, true), .pin_memory = device.is_cuda()});
    s->steps_per_epoch = s->train_loader->num_batches();
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

EvalResult evaluate(nn::Module& model, data::DataLoader& loader, Device device) {
  NoGradGuard no_grad;
  model.eval();
  struct TrainModeAfter {  // also when the data fails mid-evaluation
    nn::Module& m;
    ~TrainModeAfter() { m.train(); }
  } train_mode_after{model};
  EvalResult r;
  double loss = 0;
  int64_t correct = 0;
  for (auto it = first_batch(loader, "test"); it != loader.end(); next_batch(it, "test")) {
    const data::Batch& batch = *it;
    const Tensor logits = model.forward(batch.input.to(device));
    const Tensor target = batch.target.to(device);
    loss += nn::functional::cross_entropy(logits, target, {.reduction = nn::functional::Reduction::sum}).item<double>();
    const std::vector<int64_t> pred = argmax(logits, 1).to(kCPU).to_vector<int64_t>();
    const std::vector<int64_t> truth = batch.target.to_vector<int64_t>();
    const size_t classes = static_cast<size_t>(logits.size(1));
    if (r.confusion.empty()) r.confusion.assign(classes, std::vector<int64_t>(classes, 0));
    for (size_t i = 0; i < pred.size(); ++i) {
      correct += pred[i] == truth[i];
      if (truth[i] >= 0 && static_cast<size_t>(truth[i]) < classes) ++r.confusion[truth[i]][pred[i]];
    }
    r.examples += static_cast<int64_t>(pred.size());
  }
  r.loss = loss / static_cast<double>(std::max<int64_t>(r.examples, 1));
  r.accuracy = static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(r.examples, 1));
  return r;
}

std::string dry_run_report(Session& s) {
  const int64_t batch = s.config.data.batch_size;
  Shape input{batch};
  for (int64_t d : s.sample_shape) input.push_back(d);
  std::string out = nn::summary(*s.model, input);
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
  const double state_per_param = o.type == "sgd"       ? (o.momentum > 0 ? 1 : 0)
                                 : o.type == "rmsprop" ? 1 + (o.momentum > 0) + o.centered
                                                       : 2 + o.amsgrad;
  const double params = static_cast<double>(s.model->parameter_count()) * 4;
  const double acts = activations * static_cast<double>(batch) * 4 * 2;
  out += "\nMemory estimate per training step (f32, batch " + std::to_string(batch) + ", " + s.device.str() + "):\n";
  out += "  parameters " + format_mib(params) + ", gradients " + format_mib(params) + ", optimizer state " +
         format_mib(params * state_per_param) + ", activations + their gradients " + format_mib(acts) + "\n";
  out += "  total about " + format_mib(params * (2 + state_per_param) + acts) + "\n";
  return out;
}

}  // namespace ember::app
