// The train.on_nonfinite policy.
#include "train/nonfinite_policy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"

namespace mpipe::train {

void NonFiniteSteps::record(const StepReport& report, bool is_root) {
  if (report.finite) {
    in_a_row_ = 0;
    return;
  }
  ++total_;
  ++in_a_row_;
  if (train_.on_nonfinite == OnNonFinite::kStop) {
    throw AgreedError(report.nonfinite +
                          "; stopped (train.on_nonfinite: stop; 'skip' drops "
                          "such steps instead)",
                      1);
  }
  if (in_a_row_ >= train_.max_skips_in_a_row) {
    throw AgreedError(fmt::format("{}; stopped after {} non-finite steps in a row "
                                  "(train.max_skips_in_a_row: {})",
                                  report.nonfinite, in_a_row_, train_.max_skips_in_a_row),
                      1);
  }
  if (is_root) spdlog::warn("{}; update skipped (train.on_nonfinite: skip)", report.nonfinite);
}

}  // namespace mpipe::train
