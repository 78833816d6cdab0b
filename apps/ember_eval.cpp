// ember-eval --config FILE.yaml --checkpoint PATH [--device cpu|cuda|cuda:N|auto] [--set key.path=value ...]
// Evaluates a checkpoint's model ("model." tensors of an ember-train checkpoint) on the config's test split.
// classification: loss, accuracy, per-class accuracy and the confusion matrix; language_model (text data,
// the vocabulary read from vocab.json next to the checkpoint): validation loss in nats/token, bits per
// character (or byte), perplexity and next-token accuracy; regression: the test loss (mse or l1). Exit
// codes: apps/cli.h.
#include <cmath>
#include <filesystem>

#include <ember/ember.h>

#include "apps/cli.h"
#include "apps/run_dir.h"
#include "apps/session.h"

using namespace ember;

namespace {
// `names`: the classes' names in label order (empty: "class N", or Fashion-MNIST's for `fashion`).
void print_report(const app::EvalResult& r, bool fashion, const std::vector<std::string>& names) {
  std::printf("examples %lld, test loss %.4f, test accuracy %.2f%%\n\nper-class accuracy:\n",
              static_cast<long long>(r.examples), r.loss, 100 * r.accuracy.value_or(0));
  const size_t n = r.confusion.size();
  for (size_t c = 0; c < n; ++c) {
    int64_t total = 0;
    for (int64_t v : r.confusion[c]) total += v;
    const std::string name = c < names.size()        ? names[c]
                             : fashion && n == 10 ? data::kFashionMnistClasses[c]
                                                  : "class " + std::to_string(c);
    std::printf("  %2zu %-12s %6.2f%%  (%lld examples)\n", c, name.c_str(),
                total > 0 ? 100.0 * static_cast<double>(r.confusion[c][c]) / static_cast<double>(total) : 0.0,
                static_cast<long long>(total));
  }
  std::printf("\nconfusion matrix (rows: true class, columns: predicted):\n      ");
  for (size_t c = 0; c < n; ++c) std::printf("%6zu", c);
  std::printf("\n");
  for (size_t t = 0; t < n; ++t) {
    std::printf("  %2zu |", t);
    for (size_t c = 0; c < n; ++c) std::printf("%6lld", static_cast<long long>(r.confusion[t][c]));
    std::printf("\n");
  }
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"Evaluate a checkpoint on the test split of a config's dataset", "ember-eval"};
  std::string config_path, checkpoint, device;
  std::vector<std::string> sets;
  cli.add_option("--config", config_path, "the YAML config the model was trained with")->required();
  cli.add_option("--checkpoint", checkpoint, "an ember-train checkpoint (checkpoint-<step>.safetensors)")->required();
  cli.add_option("--device", device, "cpu, cuda, cuda:N or auto (overrides the config's device)");
  cli.add_option("--set", sets, "override a config key, e.g. --set data.test_batch_size=500")->take_all();
  if (const int code = app::parse_cli(cli, argc, argv); code >= 0) return code;

  return app::run_main([&] {
    app::TrainConfig config = app::load_config(config_path, sets);
    // A device that cannot be served is named as it was given: --device, or the config's key (its file and
    // line, or its --set), as ember-train does.
    const Device dev = device.empty() ? app::config_device(config) : app::parse_device(device);
    if (!device.empty()) config.device = device;
    if (!std::filesystem::is_regular_file(checkpoint))
      throw app::ConfigError("--checkpoint " + checkpoint + ": no such file");
    // A text run's vocabulary lies next to its checkpoints.
    const std::string vocab = config.data.dataset == "text"
                                  ? (std::filesystem::path(checkpoint).parent_path() / "vocab.json").string()
                                  : "";
    auto session = app::make_session(config, dev, /*for_training=*/false, vocab);
    const Checkpoint ckpt = Checkpoint::load(checkpoint);
    app::check_corpus(*session, ckpt);
    // The run's class list (classes.json next to the checkpoint) names the classes; the test data must agree.
    std::vector<std::string> names = session->class_names;
    const auto classes_file = std::filesystem::path(checkpoint).parent_path() / "classes.json";
    if (std::filesystem::exists(classes_file)) {
      names = app::read_class_names(classes_file);
      if (!session->class_names.empty() && session->class_names != names)
        throw app::ConfigError("the test data's classes are [" + join(session->class_names) + "], but the model was "
                               "trained on [" + join(names) + "] (" + classes_file.string() +
                               "); its class indices would not match");
    }
    session->model->load_state_dict(ckpt.take("model."));
    std::printf("%s on %s (%s)\n", checkpoint.c_str(), dev.str().c_str(), config_path.c_str());
    const app::EvalResult r = app::evaluate(*session->model, *session->test_loader, dev, config);
    if (config.task == "language_model") {
      const bool chars = session->tokenizer->type() == data::Tokenizer::Type::Char;
      std::printf("validation windows %lld (%lld tokens), val loss %.4f nats/token, %.4f %s, ",
                  static_cast<long long>(r.examples), static_cast<long long>(r.predictions), r.loss,
                  app::bits_per_unit(*session, r.loss), chars ? "bits/char" : "bits/byte");
      // A subword token is several bytes: its bits per token too, and the bytes the tokens stand for.
      if (session->tokenizer->type() == data::Tokenizer::Type::SentencePiece)
        std::printf("%.4f bits/token (%lld bytes of text), ", r.loss / std::log(2.0),
                    static_cast<long long>(session->test_bytes));
      std::printf("perplexity %.3f, next-token accuracy %.2f%%\n", std::exp(r.loss), 100 * r.accuracy.value_or(0));
    } else if (config.task == "regression") {
      std::printf("examples %lld, test loss (%s) %.6g\n", static_cast<long long>(r.examples), config.loss.c_str(), r.loss);
    } else {
      print_report(r, config.data.dataset == "fashion_mnist", names);
    }
    return 0;
  });
}
