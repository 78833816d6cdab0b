// ember-bench --config FILE.yaml [--device cpu|cuda|cuda:N|auto|both] [--steps N] [--warmup N]
//             [--batch-size N] [--json] [--set key.path=value ...] [--find-max-batch [--max-batch N]]
// Trains the config's model for warmup + N steps on synthetic batches of the dataset's shape (apps/bench.h)
// and reports per device samples/s, ms per step (median, min, max), peak memory and the loss after those
// steps; with `both` and a usable GPU also the GPU/CPU speed-up and the largest loss difference between the
// two devices over the same steps. A table, or one JSON object with --json (on stdout; logs go to stderr).
// --find-max-batch searches instead the largest batch size that trains on a GPU without running out of
// memory (apps/bench.h: find_max_batch).
// Exit codes: apps/cli.h (2 for a --device cuda this build or machine cannot serve, with the reason; with
// `both` an unusable CUDA is reported as skipped, with the reason, and the CPU half still runs).
#include <cmath>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include <ember/ember.h>

#include "apps/bench.h"
#include "apps/cli.h"
#include "base/format.h"
#include "base/log.h"

using namespace ember;
using nlohmann::json;

namespace {

// One device's row: measured, or skipped with the reason.
struct Row {
  std::string device;
  std::optional<app::DeviceResult> result;
  std::string skipped;  // why this device was not measured
};

// The comparison of two measured devices (the second against the first, the CPU).
struct Comparison {
  double speedup = 0;  // samples/s of the GPU / samples/s of the CPU
  double max_loss_diff = 0;
  int64_t max_loss_diff_step = 0;  // 1-based, warmup included
};

Comparison compare(const app::DeviceResult& cpu, const app::DeviceResult& gpu) {
  Comparison c{.speedup = gpu.samples_per_sec / cpu.samples_per_sec};
  for (size_t i = 0; i < cpu.losses.size() && i < gpu.losses.size(); ++i) {
    const double diff = std::abs(cpu.losses[i] - gpu.losses[i]);
    if (diff > c.max_loss_diff || c.max_loss_diff_step == 0) {
      c.max_loss_diff = diff;
      c.max_loss_diff_step = static_cast<int64_t>(i) + 1;
    }
  }
  return c;
}

json to_json(const std::string& config_path, const app::TrainConfig& cfg, const app::BenchOptions& o,
             const std::vector<Row>& rows, const std::optional<Comparison>& comparison) {
  json out{{"config", config_path}, {"batch_size", cfg.data.batch_size}, {"steps", o.steps},
           {"warmup", o.warmup}, {"seed", cfg.seed}, {"devices", json::array()}};
  for (const Row& row : rows) {
    if (!row.result) {
      out["devices"].push_back({{"device", row.device}, {"status", "skipped"}, {"reason", row.skipped}});
      continue;
    }
    const app::DeviceResult& r = *row.result;
    out["sample_shape"] = std::vector<int64_t>(r.sample_shape.begin(), r.sample_shape.end());
    out["classes"] = r.classes;
    out["devices"].push_back({{"device", row.device}, {"status", "ok"}, {"description", r.description},
                              {"samples_per_sec", r.samples_per_sec},
                              {"ms_per_step", {{"median", r.ms_median}, {"min", r.ms_min}, {"max", r.ms_max}}},
                              {"peak_memory_mib", r.peak_memory_mib}, {"peak_memory_kind", r.peak_memory_kind},
                              {"allocator_peak_mib", r.allocator_peak_mib}, {"final_loss", r.losses.back()},
                              {"steps_run", r.losses.size()}});
  }
  if (comparison)
    out["comparison"] = {{"speedup", comparison->speedup}, {"max_loss_diff", comparison->max_loss_diff},
                         {"max_loss_diff_step", comparison->max_loss_diff_step}};
  return out;
}

void print_table(const std::string& config_path, const app::TrainConfig& cfg, const app::BenchOptions& o,
                 const std::vector<Row>& rows, const std::optional<Comparison>& comparison) {
  std::printf("ember-bench %s: batch %lld, %lld timed steps after %lld warmup, synthetic batches (seed %llu)\n",
              config_path.c_str(), static_cast<long long>(cfg.data.batch_size), static_cast<long long>(o.steps),
              static_cast<long long>(o.warmup), static_cast<unsigned long long>(cfg.seed));
  for (const Row& row : rows)
    if (row.result) std::printf("  %s: %s\n", row.device.c_str(), row.result->description.c_str());
  std::printf("\n%-8s %12s %13s %9s %9s %18s %12s\n", "device", "samples/s", "ms/step med", "min", "max",
              "peak memory", "final loss");
  for (const Row& row : rows) {
    if (!row.result) {
      std::printf("%-8s skipped: %s\n", row.device.c_str(), row.skipped.c_str());
      continue;
    }
    const app::DeviceResult& r = *row.result;
    const std::string memory = format_mib(r.peak_memory_mib * kBytesPerMiB) + " (" + r.peak_memory_kind + ")";
    std::printf("%-8s %12.0f %13.3f %9.3f %9.3f %18s %12.6f\n", row.device.c_str(), r.samples_per_sec, r.ms_median,
                r.ms_min, r.ms_max, memory.c_str(), r.losses.back());
  }
  if (comparison)
    std::printf("\n%s vs %s: %.2fx the samples/s; largest loss difference %.3g (step %lld of %lld)\n",
                rows[1].device.c_str(), rows[0].device.c_str(), comparison->speedup, comparison->max_loss_diff,
                static_cast<long long>(comparison->max_loss_diff_step), static_cast<long long>(o.warmup + o.steps));
}

int print_max_batch(const std::string& config_path, Device device, const app::MaxBatchResult& r, bool as_json) {
  if (as_json) {
    json trials = json::array();
    for (const auto& [batch, fit] : r.trials) trials.push_back({{"batch_size", batch}, {"fits", fit}});
    std::printf("%s\n", json{{"config", config_path}, {"device", device.str()}, {"max_batch_size", r.batch_size},
                              {"peak_memory_mib", r.peak_mib}, {"failed_batch_size", r.failed_batch_size},
                              {"failure", r.failure}, {"trials", trials}}
                             .dump(2)
                             .c_str());
    return 0;
  }
  std::printf("ember-bench %s on %s: %zu trials (batch size: fits?):", config_path.c_str(), device.str().c_str(),
              r.trials.size());
  for (const auto& [batch, fit] : r.trials) std::printf(" %lld:%s", static_cast<long long>(batch), fit ? "yes" : "no");
  std::printf("\n");
  if (r.batch_size == 0) {
    std::printf("not even batch size 1 fits: %s\n", r.failure.c_str());
    return 0;
  }
  std::printf("largest batch size that fits: %lld (allocator peak %s)\n", static_cast<long long>(r.batch_size),
              format_mib(r.peak_mib * kBytesPerMiB).c_str());
  if (r.failed_batch_size == 0) std::printf("(the search stopped at --max-batch; more may fit)\n");
  else std::printf("batch size %lld runs out of memory: %s\n", static_cast<long long>(r.failed_batch_size), r.failure.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"Benchmark training a config's model on synthetic batches, per device", "ember-bench"};
  std::string config_path, device;
  std::vector<std::string> sets;
  app::BenchOptions options;
  int64_t batch_size = 0;
  bool as_json = false, find_max = false;
  int64_t max_batch = int64_t{1} << 18;
  cli.add_option("--config", config_path, "the YAML config (as for ember-train)")->required();
  cli.add_option("--device", device, "cpu, cuda, cuda:N, auto or both (default: the config's device)");
  cli.add_option("--steps", options.steps, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--warmup", options.warmup, "untimed steps before them")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cli.add_option("--batch-size", batch_size, "overrides data.batch_size")->check(CLI::PositiveNumber);
  cli.add_flag("--json", as_json, "print one JSON object instead of the table");
  cli.add_flag("--find-max-batch", find_max, "search the largest batch size that fits in the GPU's memory");
  cli.add_option("--max-batch", max_batch, "where --find-max-batch stops doubling")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cli.add_option("--set", sets, "override a config key with type checking, e.g. --set optimizer.lr=0.01")->take_all();
  if (const int code = app::parse_cli(cli, argc, argv); code >= 0) return code;

  return app::run_main([&] {
    if (batch_size > 0) sets.push_back("data.batch_size=" + std::to_string(batch_size));
    const app::TrainConfig cfg = app::load_config(config_path, sets, /*fashion_files=*/false);
    // A device from the config is reported as its key (file and line, or --set), not as --device.
    const bool from_config = device.empty();
    if (from_config) device = cfg.device;
    const auto parse = [&](const std::string& text) {
      return from_config ? app::config_device(cfg) : app::parse_device(text);
    };
    if (find_max) {
      const Device d = device == "both" ? app::parse_device("cuda") : parse(device);
      if (d.is_cpu())
        throw app::ConfigError("--find-max-batch needs a CUDA device: on the CPU, running out of memory ends the "
                               "process (the kernel's OOM killer) before Ember could report it");
      return print_max_batch(config_path, d, app::find_max_batch(cfg, d, max_batch, 2), as_json);
    }
    // Parse every device before any work: a device that cannot be served fails fast (exit 2), except the
    // GPU half of `both`, which is reported as skipped with Device::parse's reason.
    std::vector<Row> rows;
    std::vector<Device> devices;
    if (device == "both") {
      rows.push_back({"cpu", std::nullopt, ""});
      devices.push_back(kCPU);
      try {
        devices.push_back(Device::parse("cuda"));
        rows.push_back({devices.back().str(), std::nullopt, ""});
      } catch (const Error& e) {
        rows.push_back({"cuda", std::nullopt, e.what()});
        logger().warn("ember-bench: cuda skipped: {}", e.what());
      }
    } else {
      devices.push_back(parse(device));
      rows.push_back({devices.back().str(), std::nullopt, ""});
    }
    for (size_t i = 0; i < devices.size(); ++i) {
      if (!as_json) logger().info("ember-bench: {} steps on {}", options.warmup + options.steps, devices[i].str());
      rows[i].result = app::run_bench(cfg, devices[i], options);
    }
    std::optional<Comparison> comparison;
    if (rows.size() == 2 && rows[0].result && rows[1].result) comparison = compare(*rows[0].result, *rows[1].result);
    if (as_json)
      std::printf("%s\n", to_json(config_path, cfg, options, rows, comparison).dump(2).c_str());
    else
      print_table(config_path, cfg, options, rows, comparison);
    return 0;
  });
}
