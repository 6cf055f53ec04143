// Whether one step's programs run to their end under the executor's blocking rules (no deadlock).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/op.h"
#include "plan/placement.h"

namespace mpipe::plan {

// Walks every rank's program of one step (`programs`, ranks and chunks placed as `placement`
// says) as Executor::train_step and pipeline::Link run them, taking the worst case of MPI's
// progress: a send completes only once its receive is posted (a message above the eager limit).
// - Before op i a rank has posted receives_posted(program, receives_ahead)[i] receives.
// - A receive op waits until its peer has issued the matching send.
// - A send op issues its send, then completes the oldest held sends while more than
//   kSendsInFlight are held (Link::send).
// - A batched weight-gradient op (micro-batch -1) first completes every held send.
// - After op i the sends send_releases counts are released, and at the end all of them.
// What does not depend on receives_ahead (each message's two ends, the send releases) is found
// once, at construction, so receives_ahead's search walks the step again at no more cost.
class StepProgress {
 public:
  StepProgress(const std::vector<Program>& programs, const Placement& placement);
  ~StepProgress();
  StepProgress(const StepProgress&) = delete;
  StepProgress& operator=(const StepProgress&) = delete;

  // Nothing when every rank reaches its end with `receives_ahead` posted; otherwise where each
  // rank waits forever, in one line: "rank 1 waits at SG0.1 for rank 2 to post the receive of
  // its send 9 of the step; rank 2 waits at RG1.1 for rank 1 to send; ...".
  std::optional<std::string> deadlock(int receives_ahead) const;
  // send_releases of rank `rank`.
  const std::vector<int>& sends_released(int rank) const;

 private:
  struct Rank;  // one rank's program and its messages' ends
  std::vector<Rank> ranks_;
};

// StepProgress(programs, placement).deadlock(receives_ahead).
std::optional<std::string> step_deadlock(const std::vector<Program>& programs,
                                         const Placement& placement, int receives_ahead);

}  // namespace mpipe::plan
