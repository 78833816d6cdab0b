// ember-generate --checkpoint RUN_DIR|FILE [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K]
//                [--seed S] [--device cpu|cuda|cuda:N|auto]
// Samples text from a language model trained by ember-train (task: language_model): the run directory's
// config.yaml builds the model, vocab.json is its tokenizer, and the newest valid checkpoint (or the given
// file) its weights. Writes the prompt and the new text to stdout as it is made, then the speed to stderr.
// Exit codes: apps/cli.h.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <ember/ember.h>

#include "apps/cli.h"
#include "apps/config.h"
#include "apps/run_dir.h"
#include "base/log.h"

using namespace ember;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App cli{"Sample text from a language model trained by ember-train", "ember-generate"};
  std::string checkpoint, prompt = "\n", device;
  int64_t tokens = 500, top_k = 0;
  double temperature = 0.8;
  uint64_t seed = 0;
  cli.add_option("--checkpoint", checkpoint, "the run directory (its newest checkpoint) or one checkpoint file")->required();
  cli.add_option("--prompt", prompt, "the text to continue (default: a newline)");
  cli.add_option("--tokens", tokens, "how many tokens to generate")->check(CLI::NonNegativeNumber)->capture_default_str();
  cli.add_option("--temperature", temperature, "divides the logits; 0: always the most likely token")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cli.add_option("--top-k", top_k, "sample among the k most likely tokens; 0: all")->check(CLI::NonNegativeNumber);
  cli.add_option("--seed", seed, "the sampling's seed")->capture_default_str();
  cli.add_option("--device", device, "cpu, cuda, cuda:N or auto (default: the run's config)");
  if (const int code = app::parse_cli(cli, argc, argv); code >= 0) return code;

  return app::run_main([&] {
    const fs::path given(checkpoint);
    if (!fs::exists(given)) throw app::ConfigError("--checkpoint " + checkpoint + ": no such file or directory");
    const fs::path run = fs::is_directory(given) ? given : given.parent_path();
    for (const char* name : {"config.yaml", "vocab.json"})
      if (!fs::is_regular_file(run / name))
        throw app::ConfigError("--checkpoint " + checkpoint + ": " + (run / name).string() +
                               " is missing: give the run directory of an ember-train run with task: language_model");
    app::TrainConfig config = app::load_config((run / "config.yaml").string());
    if (config.task != "language_model")
      throw app::ConfigError((run / "config.yaml").string() + ": the run's task is " + config.task +
                             "; ember-generate samples from language models (task: language_model)");
    const Device dev = device.empty() ? app::config_device(config) : app::parse_device(device);
    const data::Tokenizer tokenizer = data::Tokenizer::load((run / "vocab.json").string());

    Checkpoint ckpt = app::checkpoint_from_arg(checkpoint);

    Generator init(config.seed);
    const int64_t context = config.data.context;
    std::shared_ptr<nn::Module> model = nn::build_model(
        config.model, {.sample_shape = {context}, .dtype = DType::i64, .vocab_size = tokenizer.vocab_size()}, &init);
    model->load_state_dict(ckpt.take("model."));
    model->to(dev);
    auto lm = std::dynamic_pointer_cast<nn::CausalLM>(model);
    const bool cached = lm != nullptr;
    if (!cached) lm = std::make_shared<nn::WindowedLM>(model, tokenizer.vocab_size(), context);

    const std::vector<int64_t> ids = tokenizer.encode(prompt, "--prompt");
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
    Generator gen(seed);
    const auto started = std::chrono::steady_clock::now();
    const std::vector<int64_t> out = nn::generate(
        *lm, ids, {.max_new_tokens = tokens, .temperature = temperature, .top_k = top_k, .gen = &gen}, [&](int64_t t) {
          // Bytes go out as they come (a terminal joins a character's UTF-8 bytes); a char token is whole, a
          // SentencePiece token its piece's text (a byte piece: its byte).
          const std::string text = tokenizer.token_text(t);
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
          return true;
        });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::fputs("\n", stdout);
    std::fflush(stdout);  // the text before the speed line on stderr, also when both go to one pipe
    std::fprintf(stderr, "%zu tokens in %.2f s: %.1f tokens/s on %s (%s, prompt %zu tokens, checkpoint %s)\n",
                 out.size(), seconds, static_cast<double>(out.size()) / std::max(seconds, 1e-9), dev.str().c_str(),
                 cached ? "incremental decode" : "windowed recompute, no cache", ids.size(), ckpt.source().c_str());
    return 0;
  });
}
