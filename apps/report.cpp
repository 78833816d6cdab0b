#include "apps/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "apps/yaml_reader.h"
#include "core/atomic_file.h"
#include "data/idx.h"

namespace ember::app {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The rows of a .jsonl file (none when it is absent); a line that is not a JSON object is an error.
std::vector<json> read_jsonl(const fs::path& path) {
  std::vector<json> rows;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json row = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!row.is_object()) throw ConfigError(path.string() + ": a line is not a JSON object: " + line.substr(0, 200));
    rows.push_back(std::move(row));
  }
  return rows;
}

// A metric as a double: a number, or NaN/±inf from metrics.jsonl's "NaN"/"Infinity" strings; nullopt when
// the row lacks it or holds null.
std::optional<double> value_of(const json& row, const std::string& key) {
  const auto it = row.find(key);
  if (it == row.end() || it->is_null()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    try {
      return std::stod(it->get<std::string>());
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

struct Series {
  std::string name, color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // (step, value), finite values only
};

struct Plot {
  std::string id, title, y_label;
  std::vector<Series> series;
};

// (step, key) of every row with a finite value of `key`.
Series series_of(const std::vector<json>& rows, const std::string& key, std::string name, std::string color,
                 bool dashed = false) {
  Series s{std::move(name), std::move(color), dashed, {}};
  for (const json& row : rows) {
    const auto step = value_of(row, "step");
    const auto v = value_of(row, key);
    if (step && v && std::isfinite(*v)) s.points.emplace_back(*step, *v);
  }
  return s;
}

// Round tick spacing (1, 2 or 5 × 10^k) for about `count` ticks over `span`.
double tick_step(double span, int count) {
  const double raw = span / count;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string tick_label(double v, double step) {
  if (std::fabs(v) < step * 1e-6) return "0";
  const double a = std::fabs(v);
  if (a >= 1e7 || a < 1e-3) return fmt("%.3g", v);
  if (a >= 1e4) return fmt("%.0f", v);
  return fmt("%.4g", v);
}

// One plot as inline SVG. Each series is a <polyline> (its vertices are the points, counted by the browser
// check in tests/test_report.cpp), with circle markers when it has few points.
std::string render_plot(const Plot& plot) {
  constexpr double W = 480, H = 270, L = 64, R = 14, T = 34, B = 40;
  std::ostringstream o;
  size_t total = 0;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : plot.series)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      ++total;
    }
  o << "<figure><figcaption>" << escape(plot.title) << "</figcaption>\n<svg class=\"plot\" id=\"plot-" << plot.id
    << "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W
    << "\" height=\"" << H << "\" role=\"img\" aria-label=\"" << escape(plot.title) << "\">\n";
  if (total == 0) {
    o << "<text x=\"" << W / 2 << "\" y=\"" << H / 2 << "\" text-anchor=\"middle\" class=\"empty\">no data in this run"
      << "</text>\n</svg></figure>\n";
    return o.str();
  }
  if (x1 <= x0) x0 -= 1, x1 += 1;
  if (y1 <= y0) {
    const double pad = y0 != 0 ? std::fabs(y0) * 0.1 : 1;
    y0 -= pad, y1 += pad;
  } else {
    const double pad = (y1 - y0) * 0.05;
    y0 -= pad, y1 += pad;
  }
  const auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  const auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  // Axes, grid and tick labels.
  o << "<rect class=\"frame\" x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\"/>\n";
  const double ys = tick_step(y1 - y0, 5);
  for (double y = std::ceil(y0 / ys) * ys; y <= y1; y += ys) {
    o << "<line class=\"grid\" x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << fmt("%.1f", py(y)) << "\" y2=\""
      << fmt("%.1f", py(y)) << "\"/><text class=\"tick\" x=\"" << L - 4 << "\" y=\"" << fmt("%.1f", py(y) + 4)
      << "\" text-anchor=\"end\">" << tick_label(y, ys) << "</text>\n";
  }
  const double xs = std::max(1.0, tick_step(x1 - x0, 6));
  for (double x = std::ceil(x0 / xs) * xs; x <= x1; x += xs) {
    o << "<line class=\"grid\" y1=\"" << T << "\" y2=\"" << H - B << "\" x1=\"" << fmt("%.1f", px(x)) << "\" x2=\""
      << fmt("%.1f", px(x)) << "\"/><text class=\"tick\" x=\"" << fmt("%.1f", px(x)) << "\" y=\"" << H - B + 14
      << "\" text-anchor=\"middle\">" << tick_label(x, xs) << "</text>\n";
  }
  o << "<text class=\"axis\" x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">step</text>\n"
    << "<text class=\"axis\" transform=\"translate(14 " << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << escape(plot.y_label) << "</text>\n";
  // Series, then the legend above the frame.
  double legend_x = L;
  for (const Series& s : plot.series) {
    if (s.points.empty()) continue;
    o << "<polyline class=\"series\" data-series=\"" << escape(s.name) << "\" fill=\"none\" stroke=\"" << s.color
      << "\" stroke-width=\"1.6\"" << (s.dashed ? " stroke-dasharray=\"5 3\"" : "") << " points=\"";
    for (size_t i = 0; i < s.points.size(); ++i)
      o << (i ? " " : "") << fmt("%.2f", px(s.points[i].first)) << "," << fmt("%.2f", py(s.points[i].second));
    o << "\"><title>" << escape(s.name) << "</title></polyline>\n";
    if (s.points.size() <= 60)
      for (const auto& [x, y] : s.points)
        o << "<circle cx=\"" << fmt("%.2f", px(x)) << "\" cy=\"" << fmt("%.2f", py(y)) << "\" r=\"2.5\" fill=\""
          << s.color << "\"><title>" << escape(s.name) << ": step " << fmt("%.0f", x) << ", " << fmt("%.6g", y)
          << "</title></circle>\n";
    o << "<line x1=\"" << legend_x << "\" x2=\"" << legend_x + 18 << "\" y1=\"14\" y2=\"14\" stroke=\"" << s.color
      << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"5 3\"" : "") << "/><text class=\"legend\" x=\""
      << legend_x + 22 << "\" y=\"18\">" << escape(s.name) << "</text>\n";
    legend_x += 30 + 6.2 * static_cast<double>(s.name.size());
  }
  o << "</svg></figure>\n";
  return o.str();
}

// The confusion matrix as a heat map: cell colour = the share of its row (the true class's examples).
std::string render_confusion(const json& confusion, const std::string& dataset) {
  const json& m = confusion.at("matrix");
  const size_t n = m.size();
  if (n == 0) return "";
  const bool fashion = dataset == "fashion_mnist" && n == 10;
  const auto name = [&](size_t c) { return fashion ? std::to_string(c) + " " + data::kFashionMnistClasses[c] : std::to_string(c); };
  const double cell = std::clamp(420.0 / static_cast<double>(n), 8.0, 40.0), left = fashion ? 110 : 40, top = 30;
  const double W = left + cell * static_cast<double>(n) + 10, H = top + cell * static_cast<double>(n) + 34;
  std::ostringstream o;
  o << "<figure><figcaption>Confusion matrix of the final evaluation (rows: true class, columns: predicted; "
       "colour: share of the row)</figcaption>\n<svg class=\"heatmap\" id=\"confusion\" xmlns=\"http://www.w3.org/2000/svg\""
    << " viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W << "\" height=\"" << H << "\">\n";
  for (size_t t = 0; t < n; ++t) {
    double total = 0;
    for (const auto& v : m[t]) total += v.get<double>();
    const double y = top + cell * static_cast<double>(t);
    o << "<text class=\"tick\" x=\"" << left - 4 << "\" y=\"" << fmt("%.1f", y + cell / 2 + 4) << "\" text-anchor=\"end\">"
      << escape(name(t)) << "</text>\n";
    for (size_t c = 0; c < n; ++c) {
      const double count = m[t][c].get<double>(), share = total > 0 ? count / total : 0;
      const double x = left + cell * static_cast<double>(c);
      // white → dark blue
      const int r = static_cast<int>(247 - share * (247 - 8)), g = static_cast<int>(251 - share * (251 - 48)),
                b = static_cast<int>(255 - share * (255 - 107));
      o << "<rect class=\"cell\" x=\"" << fmt("%.1f", x) << "\" y=\"" << fmt("%.1f", y) << "\" width=\"" << fmt("%.1f", cell)
        << "\" height=\"" << fmt("%.1f", cell) << "\" fill=\"rgb(" << r << "," << g << "," << b << ")\"><title>true "
        << escape(name(t)) << ", predicted " << escape(name(c)) << ": " << fmt("%.0f", count) << "</title></rect>\n";
      if (n <= 20)
        o << "<text class=\"count" << (share > 0.5 ? " light" : "") << "\" x=\"" << fmt("%.1f", x + cell / 2) << "\" y=\"" << fmt("%.1f", y + cell / 2 + 4)
          << "\" text-anchor=\"middle\">" << fmt("%.0f", count)
          << "</text>\n";
    }
  }
  for (size_t c = 0; c < n; ++c)
    o << "<text class=\"tick\" x=\"" << fmt("%.1f", left + cell * (static_cast<double>(c) + 0.5)) << "\" y=\""
      << top - 6 << "\" text-anchor=\"middle\">" << c << "</text>\n";
  o << "<text class=\"axis\" x=\"" << left + cell * static_cast<double>(n) / 2 << "\" y=\"" << H - 8
    << "\" text-anchor=\"middle\">predicted class</text>\n</svg></figure>\n";
  return o.str();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* const kStyle = R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.meta { color: #666; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: 2px; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg .legend { font-size: 11px; } svg text.light { fill: #fff; } svg .axis { font-size: 12px; fill: #555; } svg .empty { fill: #999; font-size: 13px; }
svg .frame { fill: none; stroke: #999; } svg .grid { stroke: #e4e4e4; }
table { border-collapse: collapse; } td, th { padding: 2px 10px; border-bottom: 1px solid #eee; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
</style>
)";

}  // namespace

std::string render_report(const fs::path& dir) {
  const std::vector<json> epochs = read_jsonl(dir / "metrics.jsonl"), steps = read_jsonl(dir / "steps.jsonl");
  if (epochs.empty() && steps.empty())
    throw ConfigError("ember-report: " + dir.string() + " has no metrics (metrics.jsonl and steps.jsonl are missing or "
                      "empty): is it an ember-train run directory, and has it logged a step yet?");
  std::string task = "classification", dataset;
  const std::string config_text = read_text(dir / "config.yaml");
  if (!config_text.empty()) {
    try {
      const YAML::Node config = YAML::Load(config_text);
      if (config["task"]) task = config["task"].as<std::string>();
      if (config["data"] && config["data"]["dataset"]) dataset = config["data"]["dataset"].as<std::string>();
    } catch (const YAML::Exception& e) {
      throw ConfigError((dir / "config.yaml").string() + " is not valid YAML (" + e.what() + ")");
    }
  }
  // The bits key of a language model's rows: test_bits_per_char, _per_byte or _per_token.
  std::string bits_key = "test_bits_per_token";
  if (!epochs.empty())
    for (const auto& [key, value] : epochs.back().items())
      if (key.rfind("test_bits_per_", 0) == 0) bits_key = key;
  const std::string bits_name = "bits per " + bits_key.substr(std::string("test_bits_per_").size());

  std::vector<Plot> plots;
  plots.push_back({"loss", "Loss", task == "language_model" ? "nats per token" : "loss",
                   {series_of(steps, "loss", "train (logged steps)", "#9ecae1"),
                    series_of(epochs, "train_loss", "train (epoch mean)", "#1f77b4"),
                    series_of(epochs, "test_loss", task == "language_model" ? "validation" : "test", "#d62728")}});
  if (task == "classification")
    plots.push_back({"accuracy", "Accuracy", "accuracy",
                     {series_of(epochs, "train_accuracy", "train", "#1f77b4"),
                      series_of(epochs, "test_accuracy", "test", "#d62728")}});
  if (task == "language_model")
    plots.push_back({"bits", "Validation " + bits_name, bits_name, {series_of(epochs, bits_key, "validation", "#d62728")}});
  plots.push_back({"lr", "Learning rate", "lr", {series_of(steps, "lr", "lr (logged steps)", "#2ca02c")}});
  plots.push_back({"throughput", "Throughput", "samples/s",
                   {series_of(steps, "samples_per_sec", "epoch so far (logged steps)", "#9467bd"),
                    series_of(epochs, "samples_per_sec", "epoch", "#8c564b", true)}});
  plots.push_back({"memory", "Memory", "MiB allocated", {series_of(steps, "memory_mib", "allocated", "#ff7f0e")}});

  std::ostringstream o;
  const std::string name = fs::absolute(dir).lexically_normal().filename().string();
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Ember run " << escape(name)
    << "</title>\n" << kStyle << "</head><body>\n<h1>Ember run " << escape(name) << "</h1>\n<p class=\"meta\">"
    << escape(fs::absolute(dir).lexically_normal().string()) << " · task " << escape(task);
  if (!epochs.empty())
    o << " · " << fmt("%.0f", value_of(epochs.back(), "epoch").value_or(0)) << " epochs, "
      << fmt("%.0f", value_of(epochs.back(), "step").value_or(0)) << " steps";
  o << " · report written " << utc_now() << "</p>\n";

  if (!epochs.empty()) {
    o << "<h2>Final metrics</h2>\n<table id=\"final-metrics\">\n";
    for (const auto& [key, value] : epochs.back().items()) {
      std::string text = value.is_null() ? "—" : value.is_string() ? value.get<std::string>() : value.dump();
      if (value.is_number_float()) text = fmt("%.6g", value.get<double>());
      if (!value.is_null()) o << "<tr><th>" << escape(key) << "</th><td class=\"num\">" << escape(text) << "</td></tr>\n";
    }
    o << "</table>\n";
  }
  o << "<h2>Training curves</h2>\n<div class=\"plots\">\n";
  for (const Plot& plot : plots) o << render_plot(plot);
  o << "</div>\n";
  if (fs::exists(dir / "confusion.json")) {
    const json confusion = json::parse(read_text(dir / "confusion.json"), nullptr, /*allow_exceptions=*/false);
    if (!confusion.is_object() || !confusion.contains("matrix") || !confusion["matrix"].is_array())
      throw ConfigError((dir / "confusion.json").string() + " is not a confusion matrix ({\"matrix\": [[...]]}); "
                        "delete it or rerun the final evaluation");
    o << "<h2>Confusion matrix</h2>\n" << render_confusion(confusion, dataset);
  }
  o << "<h2>Resolved config</h2>\n<pre id=\"config\">"
    << (config_text.empty() ? std::string("(no config.yaml in the run directory)") : escape(config_text)) << "</pre>\n";
  o << "</body></html>\n";
  return o.str();
}

void write_report(const fs::path& dir) { write_file_atomic(dir / "report.html", render_report(dir)); }

}  // namespace ember::app
