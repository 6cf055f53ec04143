// MetricsWriter: metrics.jsonl (one JSON record per line), summary.json and trace.json in a run
// directory, and with log.tensorboard the records' numbers in a TensorBoard event file.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "log/append_file.h"
#include "log/tensorboard_writer.h"

namespace mpipe::log {

// Where each rank of a pipeline spent its step time, per step, in pipeline rank order (means
// over the replicas): compute (forward, backward, recompute, loss, batched weight gradients),
// waiting (for neighbours' messages, sends, the allreduces), and the bubble: the share of the step
// spent waiting; beside them, each rank's memory so far. A rank holding several chunks (virtual
// stages) counts them together.
struct RankTimes {
  std::vector<double> compute_ms;
  std::vector<double> waiting_ms;
  std::vector<double> bubble;
  // The largest over the rank's replicas of the run's high-water mark of tensor storage so far
  // (MemoryAccount), in bytes.
  std::vector<double> peak_tensor_bytes;
  // The mean over the rank's replicas of the bytes of activations and gradients it sent per
  // step (pipeline::Link).
  std::vector<double> sent_bytes = {};
  // The keys "compute_ms_per_rank", "waiting_ms_per_rank", "bubble_per_rank", "bubble" (the
  // mean over the ranks), "peak_tensor_bytes_per_rank" and "sent_bytes_per_step_per_rank" into
  // `record`.
  void write_into(nlohmann::ordered_json& record) const;
};

// The share of the ranks' peak FLOP/s the run achieved: MFU counts the model's FLOPs (forward
// and backward), HFU also the recomputed forwards. Unknown (NaN) until a step has run.
struct FlopUtilization {
  double mfu = std::numeric_limits<double>::quiet_NaN();
  double hfu = std::numeric_limits<double>::quiet_NaN();
  // The keys "mfu" and "hfu" into `record`, when known.
  void write_into(nlohmann::ordered_json& record) const;
};

// Adds to a train record or summary.json, beside each list of one number per rank named
// "..._per_rank", the same list under its name from when "stage" meant a rank, "..._per_stage"
// ("bubble_per_rank" -> "bubble_per_stage"). The old names are deprecated, kept for one release
// (docs/design/operations.md).
void add_deprecated_stage_keys(nlohmann::json& record);
void add_deprecated_stage_keys(nlohmann::ordered_json& record);

// Whether a parsed metrics.jsonl line is a train record: an object with neither a "split" (an
// evaluation) nor an "event" (a supervisor's recovery or widening); a torn line is not.
bool is_train_record(const nlohmann::json& record);

// Appends to <run_dir>/metrics.jsonl, one object per line, flushed per line:
//   train: {"step":120,"loss":0.41,"lr":0.001,"samples_per_s":5321.0[,"skipped_steps":2]
//           [,"compute_ms_per_rank":[..],"waiting_ms_per_rank":[..],"bubble_per_rank":[..],
//           "bubble":0.21,"peak_tensor_bytes_per_rank":[..]][,"mfu":0.31,"hfu":0.42]
//           [,"compute_ms_per_stage":[..],...: the deprecated names of the lists]}
//   eval:  {"step":120,"split":"test","loss":0.45[,"accuracy":0.87][,"bits_per_char":1.9]
//           [,"bits_per_byte":1.7][,"perplexity":5.5][,"bleu":31.2,"chrf":55.0]}
//           ("split": "val" or "test"; accuracy: a classifying loss's only; bleu and chrf: corpus
//           BLEU and chrF2, 0-100, of a translation model's greedy translations)
// Non-finite numbers are written as null. The run directory is created on the first
// write, so a run that fails before that leaves nothing behind. metrics.jsonl is the run's
// record (a resume trims it, summary.json and `mpipe status` read it): a write that fails throws
// mpipe::Error with the reason, and the file keeps only whole lines (AppendFile). With
// `tensorboard`, each record's numbers also go to an event file beside metrics.jsonl
// (TensorBoardWriter), as scalars "train/<key>" and "eval/<split>/<key>"
// ("train/bubble_per_rank/1" for a list's numbers). The event file and trace.json are
// diagnostics: one that cannot be written is warned about once, with the reason, and no longer
// written; the run goes on.
class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& run_dir, bool tensorboard = false);

  // loss: the mean over the logging window; skipped_steps (written when > 0): steps of the run
  // so far whose update was dropped for a non-finite loss or gradient.
  // `ranks`: the window's step times (written when given); `utilization`: the window's MFU and
  // HFU (written when known).
  void train(int64_t step, double loss, double lr, double samples_per_s, int64_t skipped_steps = 0,
             const RankTimes& ranks = {}, const FlopUtilization& utilization = {});
  void eval(int64_t step, const std::string& split, double loss, std::optional<double> accuracy,
            std::optional<double> bits_per_char = {}, std::optional<double> bits_per_byte = {},
            std::optional<double> perplexity = {}, std::optional<double> bleu = {},
            std::optional<double> chrf = {});
  // A supervisor's recovery (mpipe supervise), written between the failed job and its relaunch:
  // {"step": resumed_from, "event": "recovery", ...details}. Its step is the checkpoint the
  // relaunch resumes, so the resume's trim (keep_records_through) keeps it and drops the steps
  // it redoes; readers of train records skip it (it has an "event").
  void recovery(int64_t resumed_from, const nlohmann::ordered_json& details);
  // A supervisor's widening (hosts that answer again), written between the job it stopped and
  // its wider relaunch, the same way: {"step": resumed_from, "event": "widening", ...details}.
  void widening(int64_t resumed_from, const nlohmann::ordered_json& details);
  // Replaces <run_dir>/summary.json atomically (temporary file + rename).
  void write_summary(const nlohmann::json& summary);
  // Replaces <run_dir>/trace.json atomically: the timeline of log.trace_steps (chrome_trace.h).
  // Returns whether it did; a failure is a warning with the reason (the run goes on without it).
  bool write_trace(const nlohmann::json& trace);
  // For a run resumed from a checkpoint at `step`: rewrites metrics.jsonl atomically with only
  // the records of steps <= `step` (those after it are redone, and would appear twice), and
  // drops lines that are not a JSON record (the torn last line of a killed run). Call before
  // the first record; no file, nothing to do. Returns how many lines it dropped.
  int64_t keep_records_through(int64_t step);

  // The loss of metrics.jsonl's last train record; NaN when there is none (or it was null).
  double last_train_loss() const;
  // How many recovery records metrics.jsonl holds (0 without the file).
  int64_t recoveries() const;
  // How many widening records metrics.jsonl holds (0 without the file).
  int64_t widenings() const;

  std::string metrics_path() const;
  std::string summary_path() const;
  std::string trace_path() const;
  // The event file's path; empty without tensorboard.
  std::string tensorboard_path() const;
  // Whether the event file is still written: false without tensorboard, and after a write of it
  // failed.
  bool writes_tensorboard() const { return tensorboard_.has_value() && !tensorboard_failed_; }

 private:
  // Writes `record` to metrics.jsonl, and to the event file with tags "<tag_prefix><key>".
  void append(const nlohmann::ordered_json& record, const std::string& tag_prefix);
  // Writes `record` to metrics.jsonl as one line.
  void append_line(const nlohmann::ordered_json& record);
  // A supervisor's record: {"step": step, "event": name, ...details}.
  void event(int64_t step, const char* name, const nlohmann::ordered_json& details);
  // How many records with "event": `name` metrics.jsonl holds.
  int64_t events(const char* name) const;
  void create_run_dir() const;

  std::string run_dir_;
  std::optional<AppendFile> metrics_;
  std::optional<TensorBoardWriter> tensorboard_;
  bool tensorboard_failed_ = false;  // warned about; no more events
};

}  // namespace mpipe::log
