// One widening of a supervised run: its log lines and its record (see widening.h).
#include "supervise/widening.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mpipe::supervise {

namespace {

std::string bits_text(bool bit_identical) {
  return bit_identical ? "bit-identical" : "not bit-identical";
}

}  // namespace

std::string widening_stop_line(const Widening& widening) {
  return fmt::format(
      "supervise: {} {} again; stopping the job at its next step boundary to relaunch it on "
      "{}{} as {} (now {} on {}), {}",
      fmt::join(widening.returned_hosts, ", "),
      widening.returned_hosts.size() == 1 ? "answers" : "answer", widening.new_hosts,
      widening.experiment.empty() ? "" : ", experiment " + widening.experiment,
      to_string(widening.new_layout), to_string(widening.old_layout), widening.old_hosts,
      bits_text(widening.bit_identical));
}

std::string widening_line(const Widening& widening, int number) {
  const int64_t redo = widening.steps_redone();
  return fmt::format(
      "supervise: widening {}: relaunching on {}{} as {}, resuming from {} ({} step{} "
      "to redo)",
      number, widening.new_hosts,
      widening.experiment.empty() ? "" : ", experiment " + widening.experiment,
      to_string(widening.new_layout),
      widening.resumed_from > 0 ? fmt::format("step {}", widening.resumed_from)
                                : std::string("the start"),
      redo, redo == 1 ? "" : "s");
}

nlohmann::ordered_json widening_json(const Widening& widening) {
  nlohmann::ordered_json record = {{"time", widening.time},
                                   {"returned_hosts", widening.returned_hosts},
                                   {"old_hosts", widening.old_hosts},
                                   {"new_hosts", widening.new_hosts},
                                   {"old_layout", layout_json(widening.old_layout)},
                                   {"new_layout", layout_json(widening.new_layout)},
                                   {"bit_identical", widening.bit_identical},
                                   {"last_step", widening.last_step},
                                   {"resumed_from", widening.resumed_from},
                                   {"steps_redone", widening.steps_redone()}};
  if (widening.seconds >= 0.0) record["seconds"] = widening.seconds;
  if (!widening.experiment.empty()) record["experiment"] = widening.experiment;
  return record;
}

}  // namespace mpipe::supervise
