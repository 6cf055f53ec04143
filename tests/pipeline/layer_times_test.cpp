// Tests for LayerTimes: per-layer step totals, the window's medians, evaluation ops dropped, and
// the slowdown test hook (stretching an op's computation, not its waits).
#include "pipeline/layer_times.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <thread>

namespace mpipe::pipeline {
namespace {

TEST(LayerTimes, MedianOverTheWindowsStepsOfEachLayersStepTotal) {
  LayerTimes times;
  times.set_windowed(true);
  const double steps[][2] = {{1.0, 9.0}, {3.0, 5.0}, {100.0, 7.0}};  // layer 4 twice a step
  for (const auto& step : steps) {
    times.begin_step();
    times.add(4, step[0] / 2);
    times.add(4, step[0] / 2);
    times.add(7, step[1]);
    times.end_step();
  }
  const auto medians = times.take_window_medians();
  EXPECT_EQ(medians.size(), 2u);
  EXPECT_DOUBLE_EQ(medians.at(4), 3.0);  // the warm-up outlier 100 is ignored
  EXPECT_DOUBLE_EQ(medians.at(7), 7.0);
  EXPECT_TRUE(times.take_window_medians().empty());  // taken: a new window
}

TEST(LayerTimes, EvenCountsTakeTheMiddleTwosMeanAndEvaluationsAreDropped) {
  LayerTimes times;
  times.set_windowed(true);
  for (double seconds : {2.0, 4.0}) {
    times.add(0, 50.0);  // an evaluation between steps
    times.begin_step();
    times.add(0, seconds);
    times.end_step();
  }
  EXPECT_DOUBLE_EQ(times.take_window_medians().at(0), 3.0);
}

TEST(LayerTimes, NothingIsKeptOutsideAWindow) {
  LayerTimes times;
  times.begin_step();
  times.add(0, 1.0);
  times.end_step();
  EXPECT_TRUE(times.take_window_medians().empty());
  EXPECT_FALSE(times.active());
}

// An op that computes: `factor` times its CPU time recorded.
TEST(LayerTimes, TheSlowdownHookStretchesEachTimedOpsComputation) {
  LayerTimes times;
  times.set_slowdown(3.0, 1, 1);
  EXPECT_FALSE(times.active());  // before step 1
  times.set_windowed(true);
  const auto start = LayerTimes::Clock::now();
  times.begin_step();
  EXPECT_DOUBLE_EQ(times.slowdown(), 3.0);
  {
    const LayerTimeScope timed(&times, 2);
    const std::clock_t busy_from = std::clock();  // 5 ms of this process's (one thread's) CPU
    while (std::clock() - busy_from < CLOCKS_PER_SEC / 200) {
    }
  }
  times.end_step();
  const double wall = std::chrono::duration<double>(LayerTimes::Clock::now() - start).count();
  const double recorded = times.take_window_medians().at(2);
  EXPECT_GE(recorded, 0.015);  // at least 3 x the 5 ms op
  EXPECT_LE(recorded, wall);
  times.begin_step();  // step 2: after the slow steps
  EXPECT_DOUBLE_EQ(times.slowdown(), 1.0);
}

// An op that waits (as a preempted one does) is not stretched by its waiting: the hook once
// multiplied a loaded machine's preemption of milliseconds by 100, and that op outweighed the
// rest of its rank (pipeline.balance: measured then kept a slow layer where it was).
TEST(LayerTimes, TheSlowdownHookDoesNotStretchAWait) {
  LayerTimes times;
  times.set_slowdown(100.0, 1, 1);
  times.begin_step();
  {
    const LayerTimeScope timed(&times, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  times.set_windowed(true);  // (the step's ops join the window when it ends)
  times.end_step();
  const double recorded = times.take_window_medians().at(0);
  EXPECT_GE(recorded, 0.05);
  EXPECT_LT(recorded, 5.0);  // 100 x 50 ms when the wall time was stretched
}

}  // namespace
}  // namespace mpipe::pipeline
