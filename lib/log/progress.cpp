// ProgressLine: formats progress records and writes them in place or as plain lines.
#include "log/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace mpipe::log {
namespace {

constexpr const char* kReturnAndClearLine = "\r\x1b[2K";

}  // namespace

std::string format_duration(double seconds) {
  const int64_t total = std::llround(std::max(seconds, 0.0));
  const int64_t h = total / 3600;
  const int64_t m = total / 60 % 60;
  const int64_t s = total % 60;
  if (h > 0) return fmt::format("{}h{:02}m{:02}s", h, m, s);
  if (m > 0) return fmt::format("{}m{:02}s", m, s);
  return fmt::format("{}s", s);
}

std::string format_rate(double per_s) {
  return std::abs(per_s) >= 100 ? fmt::format("{:.0f}", per_s) : fmt::format("{:.3g}", per_s);
}

std::string format_progress(const ProgressRecord& record, int64_t total_steps,
                            std::optional<double> eta_s) {
  std::string speed = format_rate(record.samples_per_s) + " samples/s";
  if (record.samples_per_s < kSlowSamplesPerS) {
    speed += fmt::format(" | {} s/step", format_rate(record.seconds_per_step));
    if (record.tokens_per_s > 0)
      speed += fmt::format(" | {} tokens/s", format_rate(record.tokens_per_s));
  }
  if (std::isfinite(record.mfu)) speed += fmt::format(" | MFU {:.3g}%", 100.0 * record.mfu);
  std::string text =
      fmt::format("step {}/{} | loss {:.4f} | lr {:.2e} | {} | ETA {}", record.step, total_steps,
                  record.loss, record.lr, speed, eta_s ? format_duration(*eta_s) : "--");
  if (record.recoveries > 0) {
    text += fmt::format(" | {} recover{}", record.recoveries, record.recoveries == 1 ? "y" : "ies");
  }
  if (record.widenings > 0) {
    text += fmt::format(" | {} widening{}", record.widenings, record.widenings == 1 ? "" : "s");
  }
  return text;
}

std::string format_evaluation(const EvaluationRecord& record) {
  std::string text = fmt::format("step {}: {} loss {:.4f}", record.step, record.split, record.loss);
  if (record.accuracy) {
    text += fmt::format(" | {} accuracy {:.2f}%", record.split, 100.0 * *record.accuracy);
  }
  if (record.bits_per_char) {
    text += fmt::format(" | {:.3f} bits/char", *record.bits_per_char);
    if (record.unigram_entropy_bits) {
      text += fmt::format(" (unigram entropy {:.3f})", *record.unigram_entropy_bits);
    }
  }
  if (record.perplexity) text += fmt::format(" | perplexity {:.2f}", *record.perplexity);
  // Tokenized text: beside the perplexity per token, the bits per byte, which compare across
  // tokenizers.
  if (record.bits_per_byte) text += fmt::format(" | {:.3f} bits/byte", *record.bits_per_byte);
  if (record.bleu) text += fmt::format(" | BLEU {:.2f}", *record.bleu);
  if (record.chrf) text += fmt::format(" | chrF2 {:.2f}", *record.chrf);
  return text;
}

bool stream_is_terminal(std::FILE* stream) { return ::isatty(::fileno(stream)) == 1; }

ProgressLine::ProgressLine(std::FILE* out, bool is_terminal, int64_t total_steps,
                           int64_t start_step, std::string label)
    : out_(out),
      is_terminal_(is_terminal),
      total_steps_(total_steps),
      start_step_(start_step),
      label_(std::move(label)) {}

ProgressLine::~ProgressLine() { finish(); }

std::optional<double> estimate_eta_s(const ProgressRecord& record, int64_t total_steps,
                                     int64_t start_step) {
  const int64_t steps_done = record.step - start_step;
  if (steps_done <= 0 || record.elapsed_s <= 0) return std::nullopt;
  const int64_t steps_left = std::max<int64_t>(total_steps - record.step, 0);
  return static_cast<double>(steps_left) * record.elapsed_s / static_cast<double>(steps_done);
}

std::optional<double> ProgressLine::eta_s(const ProgressRecord& record) const {
  return estimate_eta_s(record, total_steps_, start_step_);
}

void ProgressLine::update(const ProgressRecord& record) {
  std::string text = format_progress(record, total_steps_, eta_s(record));
  if (!label_.empty()) text = label_ + ": " + text;
  if (is_terminal_) {
    fmt::print(out_, "{}{}", kReturnAndClearLine, text);
    line_open_ = true;
  } else {
    fmt::print(out_, "{}\n", text);
  }
  std::fflush(out_);
}

void ProgressLine::finish() {
  if (!line_open_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  line_open_ = false;
}

}  // namespace mpipe::log
