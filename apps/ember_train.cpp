// ember-train --config FILE.yaml [--device cpu|cuda|cuda:N|auto] [--set key.path=value ...]
//             [--resume RUN_DIR] [--out DIR] [--dry-run] [--trace-batches FILE]
// ember-train --print-config-docs   (the reference of every config key: docs/config.md)
// Trains the model a YAML config describes (every key: docs/config.md); see apps/trainer.h for checkpoints,
// resume and signals. Exit codes: apps/cli.h (and 130/143 after SIGINT/SIGTERM, with a checkpoint written).
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <ember/ember.h>

#include "apps/cli.h"
#include "apps/trainer.h"

using namespace ember;

int main(int argc, char** argv) {
  CLI::App cli{"Train a model described by a YAML config (see configs/)", "ember-train"};
  std::string config_path, device, resume, out, trace_batches;
  std::vector<std::string> sets;
  bool dry_run = false, print_config_docs = false;
  cli.add_option("--config", config_path, "the YAML config (with --resume: defaults to RUN_DIR/config.yaml)");
  cli.add_option("--device", device, "cpu, cuda, cuda:N or auto (overrides the config's device)");
  cli.add_option("--set", sets, "override a config key with type checking, e.g. --set optimizer.lr=0.01")
      ->take_all();
  cli.add_option("--resume", resume, "continue the run in RUN_DIR from its newest valid checkpoint");
  cli.add_option("--out", out, "the run directory (overrides output.dir)");
  cli.add_option("--trace-batches", trace_batches,
                 "write one JSON line per optimizer step to FILE: {\"step\": s, \"starts\": [...]} (the token-window "
                 "starts of its examples; other data: \"indices\", dataset indices)");
  cli.add_flag("--dry-run", dry_run, "print the model summary and a memory estimate, then exit");
  cli.add_flag("--print-config-docs", print_config_docs,
               "print the reference of every config key (docs/config.md is this output), then exit");
  if (const int code = app::parse_cli(cli, argc, argv); code >= 0) return code;

  const int code = app::run_main([&] {
    if (print_config_docs) {
      std::fputs(app::config_reference().c_str(), stdout);
      return 0;
    }
    if (config_path.empty() && resume.empty())
      throw app::ConfigError("--config FILE.yaml is required (or --resume RUN_DIR); see ember-train --help");
    if (config_path.empty()) {
      config_path = (std::filesystem::path(resume) / "config.yaml").string();
      if (!std::filesystem::exists(config_path))
        throw app::ConfigError("--resume " + resume + ": no config.yaml there — is it a run directory of ember-train?");
    }
    app::TrainOptions o;
    o.config = app::load_config(config_path, sets);
    // Before any work, a device that cannot be served fails fast, named as it was given: --device, or the
    // config's key (its file and line, or its --set).
    if (!device.empty()) {
      o.device = app::parse_device(device);
      o.config.device = device;
    } else {
      o.device = app::config_device(o.config);
    }
    if (!resume.empty()) o.config.output.dir = resume;
    else if (!out.empty()) o.config.output.dir = out;
    o.run_dir = o.config.output.dir;
    o.resume = !resume.empty();
    o.dry_run = dry_run;
    o.trace_batches = trace_batches;
    o.progress_bar = ::isatty(STDOUT_FILENO) != 0;
    // Under a launcher (mpirun, srun): one of several data-parallel processes (apps/data_parallel.h); each
    // takes the GPU of its local rank when the device is plain "cuda" (one process per GPU).
    const distributed::Launch& launch = distributed::init();
    if (launch.world_size > 1 && o.device.is_cuda() && o.device.index == 0 && cuda::device_count() > 1)
      o.device.index = launch.local_rank % cuda::device_count();
    return app::run_training(o);
  });
  // A failed process ends the whole job at once: the others would wait for it in their next collective.
  // A stop by a signal (130/143) was agreed on by every rank, which all return it.
  if (distributed::world_size() > 1 && code != 0 && code != 130 && code != 143) distributed::abort(code);
  distributed::finalize();
  return code;
}
