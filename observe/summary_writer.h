#pragma once
// TensorBoard event files from C++, as PyTorch's torch.utils.tensorboard.SummaryWriter writes them:
//
//   ember::SummaryWriter tb("runs/exp1");
//   for (int64_t step = 1; step <= steps; ++step) {
//     ...
//     tb.add_scalar("train/loss", loss.item<double>(), step);
//     if (step % 100 == 0) tb.add_histogram("weights/fc1.weight", net->fc1->weight, step);
//   }
//   tb.add_text("notes", "lr 1e-3, batch 64", 0);
//   tb.flush();   // also done by the destructor
//
// then `tensorboard --logdir runs`. Each writer creates one new file in log_dir,
// events.out.tfevents.<seconds>.<host>.<pid>.<n> (n counts the writers of this process from 0), whose first
// record is the file_version event "brain.Event:2"; every add_* appends one Event record (TFRecord
// framing: observe/record_writer.h). Records are buffered until flush() (or the destructor).
//
// Resuming a run: `purge_step` S writes, after the version, a SessionLog START event at step S, as
// PyTorch's SummaryWriter(purge_step=S) does: TensorBoard's reader then drops every record with step >= S
// read before it (the older files' records of steps the resumed run repeats).
// NOTE: the reader takes a directory's files in name order; a new file is named with a <seconds> later
// than every events file already in log_dir, so that it sorts after them even when started within the
// same second (or after a clock step back).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "observe/histogram.h"

namespace ember {

struct SummaryWriterOptions {
  std::optional<int64_t> purge_step;  // see above; nullopt: none
  std::string filename_suffix;        // appended to the file name
};

class SummaryWriter {
 public:
  // Creates log_dir if needed and the events file in it. Throws ember::Error naming the path when either
  // cannot be created.
  explicit SummaryWriter(const std::string& log_dir, const SummaryWriterOptions& options = {});
  ~SummaryWriter();  // flushes; a failure there is logged, not thrown
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // A point of the scalar plot `tag` (stored as float32, as TensorBoard's simple_value is).
  void add_scalar(const std::string& tag, double value, int64_t step);
  // The distribution of `values` (any shape, dtype and device; observe/histogram.h says how it is binned).
  // Throws ember::Error for an empty tensor or one with no finite value within ±1e20.
  void add_histogram(const std::string& tag, const Tensor& values, int64_t step);
  void add_histogram(const std::string& tag, const Histogram& histogram, int64_t step);
  // Text (Markdown, as TensorBoard's text plugin renders it) under `tag`.
  void add_text(const std::string& tag, const std::string& text, int64_t step);
  // Writes the buffered records out. Throws ember::Error (disk full...) naming the file.
  void flush();

  const std::string& log_dir() const { return log_dir_; }
  const std::string& path() const;  // the events file

 private:
  struct Impl;
  std::string log_dir_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember
