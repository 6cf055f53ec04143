// One widening of a supervised run: its log lines and its record (see widening.h).
#include "supervise/widening.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mpipe::supervise {

std::string widening_stop_line(const Widening& widening) {
  const LayoutChange& change = widening.change;
  return fmt::format(
      "supervise: {} {} again; stopping the job at its next step boundary to relaunch it on {} "
      "(now {} on {}), {}",
      fmt::join(widening.returned_hosts, ", "),
      widening.returned_hosts.size() == 1 ? "answers" : "answer", relaunch_text(change),
      to_string(change.old_layout), change.old_hosts,
      change.bit_identical ? "bit-identical" : "not bit-identical");
}

std::string widening_line(const Widening& widening, int number) {
  return fmt::format("supervise: widening {}: relaunching on {}, {}", number,
                     relaunch_text(widening.change), resume_text(widening.change));
}

nlohmann::ordered_json widening_json(const Widening& widening) {
  return layout_change_json(widening.change, {{"returned_hosts", widening.returned_hosts}},
                            "seconds");
}

}  // namespace mpipe::supervise
