// ember-report RUN_DIR
// Writes RUN_DIR/report.html: the run's training curves, final metrics, confusion matrix (classification)
// and resolved config in one self-contained HTML file (apps/report.h). ember-train writes it at the end of
// each run; this rewrites it, e.g. for a run still training or one from an older version.
#include <cstdio>
#include <filesystem>

#include "apps/cli.h"
#include "apps/report.h"

using namespace ember;

int main(int argc, char** argv) {
  CLI::App cli{"Write a run directory's report.html (plots of its metrics, the confusion matrix, its config)",
               "ember-report"};
  std::string run_dir;
  cli.add_option("RUN_DIR", run_dir, "an ember-train run directory (holds metrics.jsonl)")->required();
  if (const int code = app::parse_cli(cli, argc, argv); code >= 0) return code;
  return app::run_main([&] {
    if (!std::filesystem::is_directory(run_dir))
      throw app::ConfigError("ember-report: " + run_dir + " is not a directory; give an ember-train run directory");
    app::write_report(run_dir);
    std::printf("wrote %s\n", (std::filesystem::path(run_dir) / "report.html").string().c_str());
    return 0;
  });
}
