// The run report (apps/report.h): ember-train writes report.html at the end of a run, and headless Chromium
// (Debian's `chromium`) renders it with no console error and with one plotted point per value of
// metrics.jsonl/steps.jsonl in each plot, and the confusion matrix's cells; the file fetches nothing. A
// language model's report plots bits per char instead of accuracy; a directory without metrics is a clear
// error; a report that cannot be written is a warning, not a failed run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "apps/report.h"
#include "test_train_util.h"

using namespace ember;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kConfig =
    test::yaml({.epochs = 3, .seed = 2, .batch_size = 50, .workers = 1, .limit = 300, .test_limit = 100, .hidden = 16,
                .output = "{log_every_steps: 2}"});

// The number of finite values of `key` in the rows of a .jsonl file.
size_t finite_values(const fs::path& file, const std::string& key) {
  size_t n = 0;
  for (const std::string& line : test::lines(test::read_text(file))) {
    const json row = json::parse(line);
    if (row.contains(key) && row[key].is_number() && std::isfinite(row[key].get<double>())) ++n;
  }
  return n;
}

// Debian's chromium, or "" after a skip (or a failure where EMBER_REQUIRE_PYTHON_CHECKS=1, as in CI).
std::string chromium() {
  const test::Result r = test::run("command -v chromium");
  if (r.rc == 0) return test::lines(r.output).front();
  const std::string why = "chromium is not installed (apt-get install chromium; scripts/setup.sh installs it): the "
                          "report's browser check cannot run";
  const char* require = std::getenv("EMBER_REQUIRE_PYTHON_CHECKS");
  if (require && std::string(require) == "1") ADD_FAILURE() << why;
  else GTEST_MESSAGE_(why.c_str(), ::testing::TestPartResult::kSkip);
  return {};
}

// Appended to a copy of the report: after loading, counts the vertices of each plot's polylines (through the
// SVG DOM, as the browser parsed them) and the heat map's cells, and records script errors, into the DOM.
const char* const kCheckScript = R"(<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
window.addEventListener('load', () => {
  const plots = {};
  for (const svg of document.querySelectorAll('svg.plot')) {
    let n = 0;
    for (const p of svg.querySelectorAll('polyline')) n += p.points.numberOfItems;
    plots[svg.id] = n;
  }
  const pre = document.createElement('pre');
  pre.id = 'ember-check';
  pre.textContent = JSON.stringify({plots, errors: window.__errors,
                                    cells: document.querySelectorAll('#confusion rect.cell').length});
  document.body.appendChild(pre);
});
</script>
)";

}  // namespace

TEST(Report, ChromiumRendersEveryPointWithoutError) {
  test::Scratch s;
  const fs::path run = s.dir() / "run";
  const test::Result r = test::train("--config " + s.write("cfg.yaml", kConfig) + " --out " + run.string());
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("report " + (run / "report.html").string()), std::string::npos) << r.output;
  const std::string html = test::read_text(run / "report.html");
  // Self-contained: nothing to fetch or run (the SVG namespace is a name, not a request).
  for (const char* piece : {"<script", "<link", " src=", " href=", "url(", "@import"})
    EXPECT_EQ(html.find(piece), std::string::npos) << piece << " in report.html";
  EXPECT_NE(html.find("Resolved config"), std::string::npos);
  EXPECT_NE(html.find("T-shirt/top"), std::string::npos);  // Fashion-MNIST's class names on the heat map

  const std::string browser = chromium();
  if (browser.empty()) return;
  const fs::path check = s.dir() / "check.html";
  std::ofstream(check) << html << kCheckScript;
  const test::Result b = test::run("timeout 120 " + browser + " --headless --no-sandbox --disable-gpu --no-first-run "
                                   "--user-data-dir=" + test::quoted((s.dir() / "chromium").string()) +
                                   " --enable-logging=stderr --v=0 --dump-dom " + test::quoted("file://" + check.string()));
  ASSERT_EQ(b.rc, 0) << b.output.substr(0, 3000);
  // Console messages (an SVG attribute the browser could not parse, a script error) are logged as CONSOLE.
  for (const std::string& line : test::lines(b.output))
    EXPECT_EQ(line.find(":CONSOLE"), std::string::npos) << line;
  const size_t at = b.output.find("<pre id=\"ember-check\">");
  ASSERT_NE(at, std::string::npos) << "the check script did not run:\n" << b.output.substr(0, 3000);
  const size_t start = at + std::string("<pre id=\"ember-check\">").size();
  const json got = json::parse(b.output.substr(start, b.output.find("</pre>", start) - start));
  EXPECT_TRUE(got["errors"].empty()) << got;
  const fs::path steps = run / "steps.jsonl", epochs = run / "metrics.jsonl";
  ASSERT_EQ(finite_values(steps, "loss"), 9u);  // 18 steps, logged every 2
  ASSERT_EQ(finite_values(epochs, "test_loss"), 3u);
  EXPECT_EQ(got["plots"]["plot-loss"],
            finite_values(steps, "loss") + finite_values(epochs, "train_loss") + finite_values(epochs, "test_loss"));
  EXPECT_EQ(got["plots"]["plot-accuracy"], finite_values(epochs, "train_accuracy") + finite_values(epochs, "test_accuracy"));
  EXPECT_EQ(got["plots"]["plot-lr"], finite_values(steps, "lr"));
  EXPECT_EQ(got["plots"]["plot-throughput"], finite_values(steps, "samples_per_sec") + finite_values(epochs, "samples_per_sec"));
  EXPECT_EQ(got["plots"]["plot-memory"], finite_values(steps, "memory_mib"));
  EXPECT_EQ(got["plots"].size(), 5u) << got;
  EXPECT_EQ(got["cells"], 100);  // 10 × 10 classes
}

// A language model's report: bits per char instead of accuracy; no confusion matrix.
TEST(Report, LanguageModelPlotsBitsPerChar) {
  test::Scratch s;
  s.write("config.yaml", "task: language_model\ndata:\n  dataset: text\n");
  s.write("metrics.jsonl",
          "{\"epoch\":1,\"step\":4,\"lr\":0.01,\"train_loss\":2.5,\"train_accuracy\":0.2,\"test_loss\":2.0,"
          "\"test_accuracy\":0.3,\"test_bits_per_char\":2.885,\"test_perplexity\":7.39,\"samples_per_sec\":100,\"seconds\":1}\n"
          "{\"epoch\":2,\"step\":8,\"lr\":0.01,\"train_loss\":\"NaN\",\"train_accuracy\":0.2,\"test_loss\":1.8,"
          "\"test_accuracy\":0.35,\"test_bits_per_char\":2.597,\"test_perplexity\":6.05,\"samples_per_sec\":100,\"seconds\":1}\n");
  const std::string html = app::render_report(s.dir());
  EXPECT_NE(html.find("id=\"plot-bits\""), std::string::npos);
  EXPECT_NE(html.find("Validation bits per char"), std::string::npos);
  EXPECT_EQ(html.find("id=\"plot-accuracy\""), std::string::npos);
  EXPECT_EQ(html.find("id=\"confusion\""), std::string::npos);
  EXPECT_NE(html.find("no data in this run"), std::string::npos);  // no steps.jsonl: the per-step plots say so
  EXPECT_NE(html.find("<td class=\"num\">NaN</td>"), std::string::npos);  // the final train_loss, as the file has it
}

TEST(Report, ADirectoryWithoutMetricsIsAClearError) {
  test::Scratch s;
  const test::Result r = test::run(std::string(EMBER_REPORT_APP) + " " + s.dir().string());
  EXPECT_EQ(r.rc, 2) << r.output;
  test::expect_in(r.output, {s.dir().string(), "has no metrics", "ember-train run directory"});
  const test::Result missing = test::run(std::string(EMBER_REPORT_APP) + " " + (s.dir() / "nope").string());
  EXPECT_EQ(missing.rc, 2) << missing.output;
  EXPECT_NE(missing.output.find("is not a directory"), std::string::npos) << missing.output;
}

// The report is written last; when it cannot be, the run still succeeds, with a warning saying how to retry.
TEST(Report, AFailedReportIsAWarningNotAFailedRun) {
  test::Scratch s;
  const fs::path run = s.dir() / "run";
  fs::create_directories(run / "report.html" / "blocker");  // a directory where the file would go
  const test::Result r = test::train("--config " + s.write("cfg.yaml", kConfig) + " --out " + run.string());
  EXPECT_EQ(r.rc, 0) << r.output;
  test::expect_in(r.output, {"could not write the run report", "ember-report " + run.string()});
  EXPECT_EQ(test::lines(test::read_text(run / "metrics.jsonl")).size(), 3u);
}
