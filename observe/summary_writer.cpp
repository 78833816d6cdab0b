#include "observe/summary_writer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/log.h"
#include "observe/record_writer.h"
#include "tensorboard.pb.h"

namespace ember {
namespace fs = std::filesystem;
namespace pb = ember::tensorboard;

namespace {

std::atomic<int64_t> g_writers{0};  // PyTorch's _global_uid: the <n> of the file name

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The <seconds> part of an events file name, or -1 for other files.
int64_t events_file_seconds(const std::string& name) {
  const std::string prefix = "events.out.tfevents.";
  if (name.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoll(name.substr(prefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

struct SummaryWriter::Impl {
  explicit Impl(const std::string& path) : records(path) {}
  observe::RecordWriter records;

  void write(pb::Event& event, int64_t step) {
    event.set_wall_time(now_seconds());
    event.set_step(step);
    std::string bytes;
    EMBER_CHECK(event.SerializeToString(&bytes), "SummaryWriter: could not serialise an event for ", records.path());
    records.write(bytes);
  }
  pb::Summary::Value& value(pb::Event& event, const std::string& tag) {
    pb::Summary::Value* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    return *v;
  }
};

SummaryWriter::SummaryWriter(const std::string& log_dir, const SummaryWriterOptions& options) : log_dir_(log_dir) {
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  EMBER_CHECK(!ec, "SummaryWriter: cannot create the log directory '", log_dir, "' (", ec.message(),
              "): choose another or fix its permissions");
  auto seconds = static_cast<int64_t>(now_seconds());
  for (const auto& entry : fs::directory_iterator(log_dir, ec))
    seconds = std::max(seconds, events_file_seconds(entry.path().filename().string()) + 1);
  char name[512];
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.%s.%lld.%lld%s", static_cast<long long>(seconds),
                host_name().c_str(), static_cast<long long>(::getpid()), static_cast<long long>(g_writers++),
                options.filename_suffix.c_str());
  impl_ = std::make_unique<Impl>((fs::path(log_dir) / name).string());
  pb::Event version;
  version.set_file_version("brain.Event:2");
  impl_->write(version, options.purge_step.value_or(0));
  if (options.purge_step) {
    pb::Event start;
    start.mutable_session_log()->set_status(pb::SessionLog::START);
    impl_->write(start, *options.purge_step);
  }
  impl_->records.flush();
}

SummaryWriter::~SummaryWriter() {
  try {
    impl_->records.flush();
  } catch (const Error& e) {
    logger().warn("{}", e.what());
  }
}

const std::string& SummaryWriter::path() const { return impl_->records.path(); }

void SummaryWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  pb::Event event;
  impl_->value(event, tag).set_simple_value(static_cast<float>(value));
  impl_->write(event, step);
}

void SummaryWriter::add_histogram(const std::string& tag, const Tensor& values, int64_t step) {
  add_histogram(tag, make_histogram(values), step);
}

void SummaryWriter::add_histogram(const std::string& tag, const Histogram& h, int64_t step) {
  pb::Event event;
  pb::HistogramProto* proto = impl_->value(event, tag).mutable_histo();
  proto->set_min(h.min);
  proto->set_max(h.max);
  proto->set_num(h.num);
  proto->set_sum(h.sum);
  proto->set_sum_squares(h.sum_squares);
  for (const double limit : h.bucket_limit) proto->add_bucket_limit(limit);
  for (const double count : h.bucket) proto->add_bucket(count);
  impl_->write(event, step);
}

void SummaryWriter::add_text(const std::string& tag, const std::string& text, int64_t step) {
  // As PyTorch writes text: a 1-element DT_STRING tensor with the text plugin's metadata (its content, the
  // serialised TextPluginData{version: 0}, is empty).
  pb::Event event;
  pb::Summary::Value& v = impl_->value(event, tag);
  v.mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  pb::TensorProto* tensor = v.mutable_tensor();
  tensor->set_dtype(pb::DT_STRING);
  tensor->mutable_tensor_shape()->add_dim()->set_size(1);
  tensor->add_string_val(text);
  impl_->write(event, step);
}

void SummaryWriter::flush() { impl_->records.flush(); }

}  // namespace ember
