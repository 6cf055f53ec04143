// Tests for send_releases: the ops of a rank's program at which its link releases its sends.
#include "plan/send_release.h"

#include <gtest/gtest.h>

#include <vector>

#include "plan/memory_model.h"
#include "plan/schedule.h"

namespace mpipe::plan {
namespace {

std::vector<Program> programs_of(ScheduleKind kind, int k, int m, int v = 1) {
  std::vector<Program> programs;
  for (int r = 0; r < k; ++r) programs.push_back(make_program(kind, k, m, r, v));
  return programs;
}

// GPipe's stage 0 (F0 SA0 F1 SA1 RG0 B0 RG1 B1): stage 1 sends its first gradient after
// receiving both activations, so both are released once RG0 has run; stage 1 never learns that
// its gradients arrived, so its link holds them to the step's end.
TEST(SendReleases, GpipeReleasesTheForwardSendsAtTheFirstGradientReceived) {
  const std::vector<Program> programs = programs_of(ScheduleKind::kGpipe, 2, 2);
  const Placement placement{.num_ranks = 2};
  EXPECT_EQ(send_releases(programs, 0, placement), (std::vector<int>{0, 0, 0, 0, 2, 2, 2, 2}));
  EXPECT_EQ(send_releases(programs, 1, placement), (std::vector<int>(8, 0)));
}

// 1F1B's middle stage of 3 (RA0 F0 SA0 RA1 F1 SA1 RG0 B0 SG0 RA2 F2 SA2 RG1 ...): RG0 shows that
// stage 2 took SA0 (not SA1, received after it sent G0); SA2 is a third send in flight, so SA1
// goes then; RG1 shows SA1 taken, but SG0 is not known to be, and sends go in order.
TEST(SendReleases, AMiddleStageReleasesWhatItsPeersShowTakenInOrder) {
  const std::vector<Program> programs = programs_of(ScheduleKind::kOneFOneB, 3, 4);
  const std::vector<int> released = send_releases(programs, 1, Placement{.num_ranks = 3});
  ASSERT_EQ(released.size(), 24u);
  EXPECT_EQ(std::vector<int>(released.begin(), released.begin() + 13),
            (std::vector<int>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2}));
}

// On every schedule and rank: the counts never fall, never pass the sends issued, and leave at
// most kSendsInFlight held.
TEST(SendReleases, HoldAtMostTheSendsInFlightOnEverySchedule) {
  for (const ScheduleKind kind :
       {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB, ScheduleKind::kZbH1,
        ScheduleKind::kInterleaved, ScheduleKind::kZbv}) {
    const int v = kind == ScheduleKind::kInterleaved || kind == ScheduleKind::kZbv ? 2 : 1;
    const std::vector<Program> programs = programs_of(kind, 4, 8, v);
    const Placement placement = placement_for(kind, 4, v);
    for (int r = 0; r < 4; ++r) {
      const Program& program = programs[static_cast<size_t>(r)];
      const std::vector<int> released = send_releases(programs, r, placement);
      int issued = 0, previous = 0;
      for (size_t i = 0; i < program.size(); ++i) {
        if (is_send(program[i].kind)) ++issued;
        EXPECT_GE(released[i], previous) << to_string(kind) << " rank " << r << " op " << i;
        EXPECT_LE(released[i], issued);
        EXPECT_LE(issued - released[i], plan::kSendsInFlight);
        previous = released[i];
      }
    }
  }
}

}  // namespace
}  // namespace mpipe::plan
