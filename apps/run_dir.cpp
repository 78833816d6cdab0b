#include "apps/run_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/yaml_reader.h"
#include "base/error.h"
#include "base/format.h"
#include "base/log.h"
#include "core/atomic_file.h"

namespace ember::app {
namespace fs = std::filesystem;

std::string checkpoint_name(int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "checkpoint-%08lld.safetensors", static_cast<long long>(step));
  return buf;
}

std::vector<std::pair<int64_t, fs::path>> list_checkpoints(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  if (!fs::is_directory(dir)) return out;
  const std::string prefix = "checkpoint-", suffix = ".safetensors";
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    int64_t step = 0;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (r.ec == std::errc() && r.ptr == digits.data() + digits.size()) out.emplace_back(step, entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void prune_checkpoints(const fs::path& dir, int64_t keep_last) {
  const auto all = list_checkpoints(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep_last) < all.size(); ++i) fs::remove(all[i].second);
}

std::optional<Checkpoint> newest_valid_checkpoint(const fs::path& dir, std::vector<std::string>& problems) {
  const auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      return Checkpoint::load(it->second.string());
    } catch (const Error& e) {
      problems.push_back(it->second.string() + " is unusable (" + e.what() + ")");
    }
  }
  return std::nullopt;
}

Checkpoint checkpoint_from_arg(const std::string& arg) {
  if (!fs::is_directory(arg)) return Checkpoint::load(arg);
  std::vector<std::string> problems;
  std::optional<Checkpoint> ckpt = newest_valid_checkpoint(arg, problems);
  for (const auto& problem : problems) logger().warn("skipping {}", problem);
  if (!ckpt) throw ConfigError("--checkpoint " + arg + ": the run directory holds no usable checkpoint");
  return std::move(*ckpt);
}

std::vector<std::string> remove_stale_temporaries(const fs::path& dir) {
  std::vector<std::string> removed;
  if (!fs::is_directory(dir)) return removed;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::optional<long long> pid = atomic_temporary_owner(name);
    if (!pid) continue;
    // NOTE: a live process of that id (ours, or another writer's) keeps its file.
    if (*pid == ::getpid() || ::kill(static_cast<pid_t>(*pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ec;
    if (fs::remove(entry.path(), ec)) removed.push_back(name);
  }
  return removed;
}

void write_class_names(const fs::path& file, const std::vector<std::string>& names) {
  write_file_atomic(file, nlohmann::json{{"classes", names}}.dump(1) + "\n");
}

std::vector<std::string> read_class_names(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file.string() + ": cannot read the run's class list");
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    return j.at("classes").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(file.string() + ": not a class list ({\"classes\": [names]}, as ember-train writes it): " +
                      e.what());
  }
}

void ensure_writable_dir(const fs::path& dir) {
  const auto refuse = [&](const std::string& why) {
    throw ConfigError("the run directory " + dir.string() + " is not writable (" + why +
                      "): choose another with --out or output.dir, or fix its permissions");
  };
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) refuse("cannot create it: " + ec.message());
  const fs::path probe = atomic_temporary_path((dir / ".write-probe").string());  // removed at once
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) refuse(std::strerror(errno));
  const bool wrote = ::write(fd, "x", 1) == 1;
  const int write_errno = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote) refuse(std::strerror(write_errno));
}

namespace {

// Keeps the lines of `path` whose epoch (found by `epoch_of`) is at most `last`; lines without one stay.
void truncate_rows(const fs::path& path, int64_t last, std::optional<int64_t> (*epoch_of)(const std::string&)) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  while (std::getline(in, line)) {
    const auto epoch = epoch_of(line);
    if (!epoch || *epoch <= last) kept += line + "\n";
  }
  in.close();
  write_file_atomic(path, kept);
}

std::optional<int64_t> jsonl_epoch(const std::string& line) {
  const size_t at = line.find("\"epoch\":");
  if (at == std::string::npos) return std::nullopt;
  return std::stoll(line.substr(at + 8));
}

std::optional<int64_t> jsonl_step(const std::string& line) {
  const size_t at = line.find("\"step\":");
  if (at == std::string::npos) return std::nullopt;
  return std::stoll(line.substr(at + 7));
}

std::optional<int64_t> csv_epoch(const std::string& line) {
  if (line.empty() || line.rfind("epoch,", 0) == 0) return std::nullopt;
  return std::stoll(line);
}

// "NaN", "Infinity" or "-Infinity": a non-finite metric in metrics.jsonl (as a string) and metrics.csv.
std::string non_finite_text(double v) {
  if (std::isnan(v)) return "NaN";
  return v > 0 ? "Infinity" : "-Infinity";
}

void append_line(const fs::path& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << "\n";
  out.flush();
  EMBER_CHECK(out.good(), "cannot append to '", path.string(), "' (disk full or no permission?)");
}

nlohmann::ordered_json json_number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(non_finite_text(v));
}
}  // namespace

Scalars metrics_scalars(const MetricsRow& r, const std::string& bits_key) {
  Scalars out{{"lr", r.lr}, {"train_loss", r.train_loss}};
  const auto optional = [&](const char* name, const std::optional<double>& v) {
    if (v) out.emplace_back(name, *v);
  };
  optional("train_accuracy", r.train_accuracy);
  optional("test_loss", r.test_loss);
  optional("test_accuracy", r.test_accuracy);
  if (r.test_bits) out.emplace_back(bits_key, *r.test_bits);
  optional("test_perplexity", r.test_perplexity);
  out.emplace_back("samples_per_sec", r.samples_per_sec);
  out.emplace_back("seconds", r.seconds);
  return out;
}

Scalars step_scalars(const StepRow& r) {
  return {{"loss", r.loss}, {"lr", r.lr}, {"samples_per_sec", r.samples_per_sec}, {"memory_mib", r.memory_mib}};
}

StepWriter::StepWriter(const fs::path& dir, std::optional<int64_t> resume_step) : path_(dir / "steps.jsonl") {
  if (resume_step) truncate_rows(path_, *resume_step, jsonl_step);
  else write_file_atomic(path_, "");
}

void StepWriter::append(const StepRow& r) {
  nlohmann::ordered_json row = {{"step", r.step}, {"epoch", r.epoch}};
  for (const auto& [name, value] : step_scalars(r)) row[name] = json_number(value);
  append_line(path_, row.dump());
}

Scalars jsonl_scalars_at_step(const fs::path& file, int64_t step) {
  Scalars out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (jsonl_step(line) != step) continue;
    const auto row = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    EMBER_CHECK(row.is_object(), file.string(), ": a line is not a JSON object: ", line);
    for (const auto& [name, value] : row.items()) {
      if (name == "epoch" || name == "step") continue;
      if (value.is_number()) out.emplace_back(name, value.get<double>());
      else if (value.is_string()) out.emplace_back(name, std::stod(value.get<std::string>()));  // "NaN", "Infinity"
    }
  }
  return out;
}

MetricsWriter::MetricsWriter(const fs::path& dir, std::optional<int64_t> resume_epochs, const std::string& bits_unit)
    : jsonl_(dir / "metrics.jsonl"), csv_(dir / "metrics.csv"), bits_key_("test_" + bits_unit) {
  if (resume_epochs) {
    truncate_rows(jsonl_, *resume_epochs, jsonl_epoch);
    truncate_rows(csv_, *resume_epochs, csv_epoch);
  } else {
    write_file_atomic(jsonl_, "");
    write_file_atomic(csv_, "");
  }
  if (!fs::exists(csv_) || fs::file_size(csv_) == 0)
    append_line(csv_, "epoch,step,lr,train_loss,train_accuracy,test_loss,test_accuracy," + bits_key_ +
                          ",test_perplexity,samples_per_sec,seconds");
}

void MetricsWriter::append(const MetricsRow& r) {
  // NOTE: JSON has no NaN or Infinity literal (nlohmann would write null, the same as "no evaluation"), so
  // a non-finite value is the string Python's json module and JavaScript spell it with: float("NaN"),
  // float("-Infinity") and Number("Infinity") read it back. The CSV uses the same words.
  const auto json_value = json_number;
  const auto json_optional = [&](const std::optional<double>& v) {
    return v ? json_value(*v) : nlohmann::ordered_json();  // null
  };
  const nlohmann::ordered_json row = {{"epoch", r.epoch},
                                      {"step", r.step},
                                      {"lr", json_value(r.lr)},
                                      {"train_loss", json_value(r.train_loss)},
                                      {"train_accuracy", json_optional(r.train_accuracy)},
                                      {"test_loss", json_optional(r.test_loss)},
                                      {"test_accuracy", json_optional(r.test_accuracy)},
                                      {bits_key_, json_optional(r.test_bits)},
                                      {"test_perplexity", json_optional(r.test_perplexity)},
                                      {"samples_per_sec", json_value(r.samples_per_sec)},
                                      {"seconds", json_value(r.seconds)}};
  append_line(jsonl_, row.dump());

  const auto csv_value = [](double v) { return std::isfinite(v) ? format_shortest(v) : non_finite_text(v); };
  const auto csv_optional = [&](const std::optional<double>& v) { return v ? csv_value(*v) : std::string(); };
  std::ostringstream csv;
  csv << r.epoch << "," << r.step << "," << csv_value(r.lr) << "," << csv_value(r.train_loss) << ","
      << csv_optional(r.train_accuracy) << "," << csv_optional(r.test_loss) << "," << csv_optional(r.test_accuracy)
      << "," << csv_optional(r.test_bits) << "," << csv_optional(r.test_perplexity) << "," << csv_value(r.samples_per_sec) << "," << csv_value(r.seconds);
  append_line(csv_, csv.str());
}

}  // namespace ember::app
