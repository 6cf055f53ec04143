// ProgressLine: the one-line training progress display (in place on a terminal, plain lines
// otherwise).
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

namespace mpipe::log {

struct ProgressRecord {
  int64_t step = 0;  // steps completed
  double loss = 0;
  double lr = 0;
  double samples_per_s = 0;
  double seconds_per_step = 0;  // over the same window
  double tokens_per_s = 0;      // token data (inputs are token ids); 0 for other data
  double mfu = std::numeric_limits<double>::quiet_NaN();  // model FLOPs utilization; NaN: unknown
  double elapsed_s = 0;    // seconds since this run started training (at start_step)
  int64_t recoveries = 0;  // lost hosts or ranks that mpipe supervise relaunched this run after
  int64_t widenings = 0;   // times mpipe supervise relaunched it wider (hosts that answer again)
};

// Below this many samples/s the progress line also shows s/step (and tokens/s for token data).
inline constexpr double kSlowSamplesPerS = 10.0;

// "7s", "1m23s", "2h05m07s" (rounded to whole seconds).
std::string format_duration(double seconds);

// A rate such as samples/s: whole numbers from 100 up ("5321"), else 3 significant digits
// ("42.5", "0.423", "0.00123"), so that a slow run does not read 0.
std::string format_rate(double per_s);

// "step 120/1000 | loss 0.4123 | lr 1.00e-03 | 5321 samples/s | MFU 12.3% | ETA 1m23s"; "ETA --"
// when `eta_s` is unknown; no MFU when it is unknown. Below kSlowSamplesPerS, s/step (and
// tokens/s) follow the samples/s: "... | 0.34 samples/s | 94.1 s/step | 696 tokens/s | MFU ...".
// A run that mpipe supervise relaunched ends with "| 1 recovery" ("| 2 recoveries", ...), and
// then "| 1 widening" ("| 2 widenings", ...) once it relaunched it wider.
std::string format_progress(const ProgressRecord& record, int64_t total_steps,
                            std::optional<double> eta_s);

// One evaluation during training: "step 200: test loss 0.4123 | test accuracy 85.31%" (no accuracy
// for a regression loss: "step 200: test loss 0.0312"), and for a text model " | 2.716 bits/char
// (unigram entropy 4.962)", for tokenized text " | 1.914 bits/byte", for a translation model " |
// BLEU 31.20 | chrF2 55.03".
struct EvaluationRecord {
  int64_t step = 0;            // steps completed
  std::string split = "test";  // the split evaluated: "val" or "test"
  double loss = 0;
  std::optional<double> accuracy;  // a fraction; a classifying loss's only
  std::optional<double> bits_per_char;
  std::optional<double> unigram_entropy_bits;
  std::optional<double> bits_per_byte;
  std::optional<double> perplexity;  // per token, of data whose targets are tokens
  std::optional<double> bleu;        // of greedy translations (train/translation_scores.h)
  std::optional<double> chrf;
};
std::string format_evaluation(const EvaluationRecord& record);

// Seconds left at the speed since `start_step` (where this run started); empty before any step.
std::optional<double> estimate_eta_s(const ProgressRecord& record, int64_t total_steps,
                                     int64_t start_step);

// True when `stream` is a terminal (isatty).
bool stream_is_terminal(std::FILE* stream);

class ProgressLine {
 public:
  // start_step: the step training started from (a resumed run's checkpoint step), so the
  // ETA uses the speed of this run only. A `label` is put before each line ("mlp-1: step ...").
  ProgressLine(std::FILE* out, bool is_terminal, int64_t total_steps, int64_t start_step = 0,
               std::string label = {});
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Terminal: rewrites the current line ("\r", clear line, text). Otherwise: one line.
  void update(const ProgressRecord& record);
  // Ends an in-place line with a newline. Idempotent; also called by the destructor.
  void finish();

 private:
  std::optional<double> eta_s(const ProgressRecord& record) const;

  std::FILE* out_;
  bool is_terminal_;
  int64_t total_steps_;
  int64_t start_step_;
  std::string label_;
  bool line_open_ = false;
};

}  // namespace mpipe::log
