// When a rank posts its receives and releases its sends in one step.
#include "plan/rank_messages.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "plan/receive_posting.h"
#include "plan/step_progress.h"

namespace mpipe::plan {

namespace {

// receives_ahead over a walk built once.
int fewest_ahead(const std::vector<Program>& programs, const StepProgress& progress) {
  const auto runs = [&](int ahead) { return !progress.deadlock(ahead); };
  if (runs(kReceivesAhead)) return kReceivesAhead;
  size_t most = 0;  // with this many ahead, every receive is posted before the first op
  for (const Program& program : programs) {
    size_t receives = 0;
    for (const Op& op : program) receives += is_receive(op.kind) ? 1 : 0;
    most = std::max(most, receives);
  }
  // Doubling, then halving the interval: the smallest `ahead` that runs.
  int fails = kReceivesAhead, works = kReceivesAhead;
  do {
    fails = works;
    works = static_cast<int>(std::min<size_t>(2 * static_cast<size_t>(works), most));
  } while (!runs(works) && std::cmp_less(works, most));
  check(runs(works), "receives_ahead: the step waits forever with every receive posted");
  while (works - fails > 1) {
    const int middle = fails + (works - fails) / 2;
    (runs(middle) ? works : fails) = middle;
  }
  return works;
}

}  // namespace

int receives_ahead(const std::vector<Program>& programs, const Placement& placement) {
  return fewest_ahead(programs, StepProgress(programs, placement));
}

std::vector<RankMessages> step_messages(const std::vector<Program>& programs,
                                        const Placement& placement) {
  const StepProgress progress(programs, placement);
  const int ahead = fewest_ahead(programs, progress);
  std::vector<RankMessages> messages;
  for (size_t rank = 0; rank < programs.size(); ++rank) {
    messages.push_back({.receives_ahead = ahead,
                        .receives_posted = receives_posted(programs[rank], ahead),
                        .sends_released = progress.sends_released(static_cast<int>(rank))});
  }
  return messages;
}

}  // namespace mpipe::plan
