// Tests for what a recovery and a widening share: where the job goes, what it resumes, and the
// record's keys around the record's own.
#include "supervise/layout_change.h"

#include <gtest/gtest.h>

namespace mpipe::supervise {
namespace {

const LayoutChange kChange{.time = "2026-11-30T20:00:00Z",
                           .old_hosts = "h1:1,h2:1",
                           .new_hosts = "h1:1",
                           .old_layout = {.stages = 2, .replicas = 1, .micro_batches = 4},
                           .new_layout = {.stages = 1, .replicas = 1, .micro_batches = 4},
                           .bit_identical = true,
                           .last_step = 1,
                           .resumed_from = 0};

TEST(LayoutChange, SaysWhereTheJobGoesAndWhatItResumes) {
  EXPECT_EQ(relaunch_text(kChange), "h1:1 as 1 stage x 1 replica, 4 micro-batches each");
  EXPECT_EQ(resume_text(kChange), "resuming from the start (1 step to redo)");
  LayoutChange served = kChange;
  served.experiment = "mlp-1";
  served.resumed_from = 1;
  EXPECT_EQ(relaunch_text(served),
            "h1:1, experiment mlp-1 as 1 stage x 1 replica, 4 micro-batches each");
  EXPECT_EQ(resume_text(served), "resuming from step 1 (0 steps to redo)");
}

TEST(LayoutChange, ItsRecordHoldsTheRecordsOwnKeysAfterTheTime) {
  const nlohmann::ordered_json record =
      layout_change_json(kChange, {{"returned_hosts", {"h2"}}}, "seconds");
  EXPECT_EQ(record.dump(),
            R"({"time":"2026-11-30T20:00:00Z","returned_hosts":["h2"],"old_hosts":"h1:1,h2:1",)"
            R"("new_hosts":"h1:1","old_layout":{"stages":2,"replicas":1,"micro_batches":4},)"
            R"("new_layout":{"stages":1,"replicas":1,"micro_batches":4},"bit_identical":true,)"
            R"("last_step":1,"resumed_from":0,"steps_redone":1})");
  LayoutChange measured = kChange;
  measured.seconds = 2.5;
  EXPECT_EQ(layout_change_json(measured, nlohmann::ordered_json::object(), "seconds_lost")
                .at("seconds_lost"),
            2.5);
}

}  // namespace
}  // namespace mpipe::supervise
