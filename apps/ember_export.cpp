// ember-export --checkpoint RUN_DIR|FILE [--out model.onnx] [--opset N]
// Writes the model of an ember-train run as an ONNX file (onnx/export.h): the run directory's config.yaml
// builds the model (vocab.json gives a text run's vocabulary), the newest valid checkpoint (or the given file)
// its weights. Default output: RUN_DIR/model.onnx. The input is dim 0 "batch" (token models: [batch,
// sequence] i64), the output the model's (logits). Exit codes: apps/cli.h; a build without libonnx says what
// to install and exits with 1.
#include <cstdio>
#include <filesystem>

#include <ember/ember.h>

#include "apps/cli.h"
#include "apps/config.h"
#include "apps/run_dir.h"
#include "apps/session.h"
#include "base/log.h"
#ifdef EMBER_HAS_ONNX
#include "onnx/export.h"
#endif

using namespace ember;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  CLI::App cli{"Export the model of an ember-train run as ONNX", "ember-export"};
  std::string checkpoint, out;
  int64_t opset = 17;
  cli.add_option("--checkpoint", checkpoint, "the run directory (its newest checkpoint) or one checkpoint file")->required();
  cli.add_option("--out", out, "the ONNX file to write (default: RUN_DIR/model.onnx)");
  cli.add_option("--opset", opset, "the ONNX opset (13 to 17)")->capture_default_str();
  if (const int code = app::parse_cli(cli, argc, argv); code >= 0) return code;

  return app::run_main([&] {
#ifndef EMBER_HAS_ONNX
    (void)opset;
    throw Error("this build of Ember has no ONNX export: install libonnx-dev and libprotobuf-dev (scripts/setup.sh "
                "does) and rebuild (cmake -DEMBER_ONNX=ON)");
    return 1;
#else
    if (opset < onnx::kMinOpset || opset > onnx::kMaxOpset)
      throw app::ConfigError("--opset " + std::to_string(opset) + ": Ember writes opsets " + std::to_string(onnx::kMinOpset) +
                             " to " + std::to_string(onnx::kMaxOpset));
    const fs::path given(checkpoint);
    if (!fs::exists(given)) throw app::ConfigError("--checkpoint " + checkpoint + ": no such file or directory");
    const fs::path run = fs::is_directory(given) ? given : given.parent_path();
    if (!fs::is_regular_file(run / "config.yaml"))
      throw app::ConfigError("--checkpoint " + checkpoint + ": " + (run / "config.yaml").string() +
                             " is missing: give the run directory of an ember-train run");
    const app::TrainConfig config = app::load_config((run / "config.yaml").string());

    // What the model takes, as ember-train built it: a text run's windows of data.context token ids (its
    // vocabulary from vocab.json), else the data's sample shape after the transforms.
    nn::ModelInput input;
    if (config.data.dataset == "text") {
      if (!fs::is_regular_file(run / "vocab.json"))
        throw app::ConfigError((run / "vocab.json").string() + " is missing: a text run's vocabulary lies next to its "
                               "checkpoints (ember-train writes it)");
      input = {.sample_shape = {config.data.context}, .dtype = DType::i64,
               .vocab_size = data::Tokenizer::load((run / "vocab.json").string()).vocab_size()};
    } else {
      const app::TrainShape shape = app::train_shape(config);
      input = {.sample_shape = shape.sample_shape, .dtype = shape.input_dtype, .vocab_size = shape.vocab_size};
    }
    Checkpoint ckpt = app::checkpoint_from_arg(checkpoint);
    Generator init(config.seed);
    std::shared_ptr<nn::Module> model = nn::build_model(config.model, input, &init);
    model->load_state_dict(ckpt.take("model."));

    Shape batch{1};
    for (int64_t s : input.sample_shape) batch.push_back(s);
    const Tensor example = zeros(batch, {.dtype = input.dtype});
    const std::string path = out.empty() ? (run / "model.onnx").string() : out;
    const onnx::ExportResult r = onnx::export_module(*model, example, path, {.opset = opset});
    std::string in_shape = "[batch";
    for (int i = 0; i < input.sample_shape.size(); ++i)
      in_shape += i == 0 && r.dynamic_sequence ? ", sequence" : ", " + std::to_string(input.sample_shape[i]);
    in_shape += "]";
    std::printf("wrote %s (opset %lld, %lld nodes, %zu initializers) from %s\n  input %s %s, output of shape %s for "
                "one example\n",
                path.c_str(), static_cast<long long>(opset), static_cast<long long>(r.nodes), r.initializers.size(),
                ckpt.source().c_str(), std::string(dtype_name(input.dtype)).c_str(), in_shape.c_str(),
                r.output.shape().str().c_str());
    return 0;
#endif
  });
}
