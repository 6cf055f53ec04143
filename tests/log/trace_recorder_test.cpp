// Tests for the trace recorder (nothing outside traced steps, recomputes found inside a backward)
// and the Chrome trace it becomes (tracks, names, times).
#include "log/trace_recorder.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "log/chrome_trace.h"

namespace mpipe::log {
namespace {

using Clock = TraceRecorder::Clock;

Clock::time_point at_ms(double ms) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(1000.0 + ms)));
}

TEST(TraceRecorder, RecordsOnlyWhileAStepIsTraced) {
  TraceRecorder recorder;
  EXPECT_FALSE(recorder.recording());
  { const TraceScope scope(recorder, TraceKind::kOptimizer); }
  EXPECT_TRUE(recorder.events().empty());
  recorder.record_step(5);
  EXPECT_TRUE(recorder.recording());
  { const TraceScope scope(recorder, TraceKind::kOptimizer); }
  recorder.record_step(0);
  { const TraceScope scope(recorder, TraceKind::kCheckpoint); }
  ASSERT_EQ(recorder.events().size(), 1u);
  EXPECT_EQ(recorder.events()[0].kind, TraceKind::kOptimizer);
  EXPECT_EQ(recorder.events()[0].step, 5);
  EXPECT_LE(recorder.events()[0].start_s, recorder.events()[0].end_s);
}

TEST(TraceRecorder, ConsecutiveRecomputedLayersAreOneRecomputeInsideTheBackward) {
  TraceRecorder recorder;
  recorder.record_step(2);
  recorder.layer_ended(true, at_ms(0.5));  // a forward outside a backward op: not a recompute
  recorder.backward_began(3, at_ms(1));
  recorder.layer_ended(true, at_ms(2));  // the stage's forward recomputed, layer by layer
  recorder.instant(TraceKind::kSendActivationDone, 1, at_ms(2.5));  // seen between two layers
  recorder.layer_ended(true, at_ms(3));
  recorder.layer_ended(false, at_ms(5));  // then the backwards
  recorder.layer_ended(false, at_ms(6));
  recorder.backward_ended(at_ms(7));
  const auto& events = recorder.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, TraceKind::kRecompute);
  EXPECT_EQ(events[0].micro_batch, 3);
  EXPECT_NEAR(events[0].start_s, 1.001, 1e-9);
  EXPECT_NEAR(events[0].end_s, 1.003, 1e-9);
  EXPECT_EQ(events[1].kind, TraceKind::kSendActivationDone);
  EXPECT_EQ(events[2].kind, TraceKind::kBackward);
  EXPECT_NEAR(events[2].start_s, 1.001, 1e-9);
  EXPECT_NEAR(events[2].end_s, 1.007, 1e-9);
}

TEST(TraceRecorder, PerLayerRecomputesAlternateWithBackwards) {
  TraceRecorder recorder;
  recorder.record_step(1);
  recorder.backward_began(0, at_ms(0));
  recorder.layer_ended(true, at_ms(1));   // layer 1 recomputed
  recorder.layer_ended(false, at_ms(3));  // its backward
  recorder.layer_ended(true, at_ms(4));   // layer 0 recomputed
  recorder.layer_ended(false, at_ms(6));
  recorder.backward_ended(at_ms(6));
  const auto& events = recorder.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, TraceKind::kRecompute);
  EXPECT_NEAR(events[0].end_s - events[0].start_s, 0.001, 1e-9);
  EXPECT_EQ(events[1].kind, TraceKind::kRecompute);
  EXPECT_NEAR(events[1].start_s, 1.003, 1e-9);
  EXPECT_NEAR(events[1].end_s, 1.004, 1e-9);
  EXPECT_EQ(events[2].kind, TraceKind::kBackward);
}

TEST(TraceName, NamesLikeTheSchedule) {
  EXPECT_EQ(trace_name(TraceKind::kForward, 3), "F3");
  EXPECT_EQ(trace_name(TraceKind::kRecvGradient, 0), "RG0");
  EXPECT_EQ(trace_name(TraceKind::kSendActivationDone, 2), "SA2 done");
  EXPECT_EQ(trace_name(TraceKind::kOptimizer, -1), "optimizer");
}

TEST(TraceName, NamesTheChunkAfterADotAsProgramsPrintIt) {
  EXPECT_EQ(trace_name(TraceKind::kForward, 3, 1), "F3.1");
  EXPECT_EQ(trace_name(TraceKind::kRecvGradient, 0, 0), "RG0.0");
  EXPECT_EQ(trace_name(TraceKind::kSendGradientDone, 2, 1), "SG2.1 done");
  EXPECT_EQ(trace_name(TraceKind::kWeightGrad, -1, 1), "W.1");  // chunk 1's batched ones
  // A group's product (the group ending at micro-batch 3), beside micro-batch 3's own W.
  EXPECT_EQ(trace_name(TraceKind::kWeightGroup, 3, 1), "WB3.1");
  EXPECT_EQ(trace_name(TraceKind::kWeightGrad, 3, 1), "W3.1");
}

TEST(ChromeTrace, OneProcessPerRankWithAComputeAndACommunicationTrack) {
  std::vector<RankTimeline> ranks(2);
  ranks[0].events = {{TraceKind::kForward, 0, 6, 10.0, 10.002}};
  ranks[1] = {.world_rank = 1,
              .replica = 0,
              .clock_offset_s = -0.5,
              .clock_uncertainty_s = 1e-6,
              .chunk_stages = {1},
              .events = {{TraceKind::kRecvActivation, 0, 6, 10.001, 10.003},
                         {TraceKind::kSendGradientDone, 0, 6, 10.004, 10.004}}};
  const nlohmann::json trace = chrome_trace(ranks);
  EXPECT_EQ(trace["otherData"]["clock_offset_s"], nlohmann::json({0.0, -0.5}));
  int tracks = 0;
  std::vector<nlohmann::json> spans;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") ++tracks;
    if (event["ph"] == "M" && event["name"] == "process_name" && event["pid"] == 1) {
      EXPECT_EQ(event["args"]["name"], "rank 1: stage 1, replica 0");
    }
    if (event["ph"] != "M") spans.push_back(event);
  }
  EXPECT_EQ(tracks, 4);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0]["name"], "F0");
  EXPECT_EQ(spans[0]["tid"], 0);
  EXPECT_EQ(spans[0]["ph"], "X");
  EXPECT_NEAR(spans[0]["ts"].get<double>(), 0.0, 1e-6);  // from the earliest event, in us
  EXPECT_NEAR(spans[0]["dur"].get<double>(), 2000.0, 1e-6);
  EXPECT_EQ(spans[1]["name"], "RA0");
  EXPECT_EQ(spans[1]["tid"], 1);
  EXPECT_NEAR(spans[1]["ts"].get<double>(), 1000.0, 1e-6);
  EXPECT_EQ(spans[1]["args"], nlohmann::json({{"step", 6}, {"micro_batch", 0}}));
  EXPECT_EQ(spans[2]["name"], "SG0 done");
  EXPECT_EQ(spans[2]["ph"], "i");
  EXPECT_FALSE(spans[2].contains("dur"));
}

TEST(ChromeTrace, EventsOfARankWithChunksNameTheirChunkAndGlobalStage) {
  // Rank 1 of K = 4 under interleaved v = 2 holds stages 1 and 5: its two F3 are two ops.
  std::vector<RankTimeline> ranks(1);
  ranks[0] = {.world_rank = 1,
              .replica = 0,
              .clock_offset_s = 0.0,
              .clock_uncertainty_s = 0.0,
              .chunk_stages = {1, 5},
              .events = {{TraceKind::kForward, 3, 2, 10.0, 10.001, 0},
                         {TraceKind::kForward, 3, 2, 10.002, 10.003, 1},
                         {TraceKind::kSendActivationDone, 3, 2, 10.004, 10.004, 1, 64},
                         {TraceKind::kOptimizer, -1, 2, 10.005, 10.006}}};
  const nlohmann::json trace = chrome_trace(ranks);
  std::vector<nlohmann::json> spans;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name") {
      EXPECT_EQ(event["args"]["name"], "rank 1: stages 1, 5; replica 0");
    }
    if (event["ph"] != "M") spans.push_back(event);
  }
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0]["name"], "F3.0");
  EXPECT_EQ(spans[0]["args"],
            nlohmann::json({{"step", 2}, {"micro_batch", 3}, {"chunk", 0}, {"stage", 1}}));
  EXPECT_EQ(spans[1]["name"], "F3.1");
  EXPECT_EQ(spans[1]["args"]["stage"], 5);
  EXPECT_EQ(spans[2]["name"], "SA3.1 done");
  EXPECT_EQ(spans[2]["args"]["stage"], 5);
  EXPECT_EQ(spans[3]["name"], "optimizer");  // of the whole step: no chunk, no stage
  EXPECT_FALSE(spans[3]["args"].contains("stage"));
}

TEST(ChromeTrace, EventsOfARankWithOneStageKeepTheirShortNames) {
  std::vector<RankTimeline> ranks(1);
  ranks[0] = {.world_rank = 2,
              .replica = 0,
              .clock_offset_s = 0.0,
              .clock_uncertainty_s = 0.0,
              .chunk_stages = {2},
              .events = {{TraceKind::kBackward, 1, 4, 10.0, 10.001, 0}}};
  const nlohmann::json trace = chrome_trace(ranks);
  const nlohmann::json& span = trace["traceEvents"].back();
  EXPECT_EQ(span["name"], "B1");
  EXPECT_EQ(span["args"],
            nlohmann::json({{"step", 4}, {"micro_batch", 1}, {"chunk", 0}, {"stage", 2}}));
}

TEST(ChromeTrace, RefusesAnEventOfAChunkTheRankDoesNotHold) {
  std::vector<RankTimeline> ranks(1);
  ranks[0].chunk_stages = {0, 3};
  ranks[0].events = {{TraceKind::kForward, 0, 1, 10.0, 10.001, 2}};
  EXPECT_THROW(chrome_trace(ranks), Error);
}

}  // namespace
}  // namespace mpipe::log
