#pragma once
// The run report: RUN_DIR/report.html, one self-contained HTML file (no script, no network, nothing
// fetched) that shows a run at a glance:
//   plots (inline SVG, x = optimizer step): loss (train per logged step from steps.jsonl, train and test per
//   epoch from metrics.jsonl); accuracy (classification), bits per char/byte/token (language_model); the
//   learning rate, throughput (samples/s) and memory (MiB) per logged step;
//   the final metrics (metrics.jsonl's last row); for classification the final evaluation's confusion
//   matrix as a heat map (confusion.json); the resolved config (config.yaml).
// Why SVG and not gnuplot: docs/report.md. ember-train writes it at the end of a run; ember-report RUN_DIR
// writes it for any run directory (a finished one, or one still training).
#include <filesystem>
#include <string>

namespace ember::app {

// The report of the run in `run_dir` as HTML. Needs metrics.jsonl or steps.jsonl there (throws ConfigError
// naming the directory otherwise); every other file is optional, and a plot without points says so.
std::string render_report(const std::filesystem::path& run_dir);
// Writes render_report(run_dir) to run_dir/report.html (atomically). Throws ConfigError / ember::Error.
void write_report(const std::filesystem::path& run_dir);

}  // namespace ember::app
