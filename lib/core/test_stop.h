// Test hook MPIPE_TEST_STOP_AT: one rank stops itself (SIGSTOP) at a named moment of a run, so a
// test can kill its host, or cut its link, at exactly that moment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_names.h"

namespace mpipe {

// The moments a rank can be stopped at; `step` below is the step the log names (1-based).
enum class TestMoment {
  kStartUp,     // past MPI_Init, before the start-up handshake (no step)
  kForward,     // the first forward of step `step`
  kBackward,    // the first backward of step `step`
  kAllreduce,   // the replicas' gradient allreduce of step `step`, its buckets started
  kPeerCopy,    // the peer copies of the checkpoint after step `step` (checkpoint.peer_copy), as
                // they start: in the copy thread, while the steps after go on, where they overlap
  kCheckpoint,  // the checkpoint after step `step`: a writer's shard (replica 0's) half written
  kEvaluation,  // the final evaluation, after step `step`
};

inline constexpr EnumNames<TestMoment, 7> kTestMomentNames = {{
    {"start-up", TestMoment::kStartUp},
    {"forward", TestMoment::kForward},
    {"backward", TestMoment::kBackward},
    {"allreduce", TestMoment::kAllreduce},
    {"peer_copy", TestMoment::kPeerCopy},
    {"checkpoint", TestMoment::kCheckpoint},
    {"evaluation", TestMoment::kEvaluation},
}};

// $MPIPE_TEST_STOP_AT, read: "<world rank>:<moment>[:<step>]"; no step: the first time.
struct TestStop {
  int world_rank = 0;
  TestMoment moment = TestMoment::kStartUp;
  std::optional<int64_t> step;
};

// Parses `value`; InputError "MPIPE_TEST_STOP_AT: expected <world rank>:<moment>[:<step>] ...".
TestStop parse_test_stop(std::string_view value);

// Reads $MPIPE_TEST_STOP_AT (unset or empty: the hook stays off) for the process of `world_rank`;
// called once, at start-up. Every rank reads the same value (mpirun -x), so a malformed one throws
// AgreedError (exit code 2) with parse_test_stop's line on every rank.
void arm_test_stop(int world_rank);

// Where the armed rank's moment and step match: touches $MPIPE_TEST_STOP_MARKER, when set (a file
// a test waits for), and stops this process (SIGSTOP). With a marker that exists already the hook
// has fired once and does not again (a relaunched job, whose ranks are numbered anew, passes);
// a test that removes the marker has the next job's rank of that number stop there too.
void test_stop_at(TestMoment moment, int64_t step = 0);

}  // namespace mpipe
