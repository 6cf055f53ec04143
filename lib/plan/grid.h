// Text rendering of schedules: programs as op strings, simulated timelines as rank x time grids.
#pragma once

#include <string>

#include "plan/op.h"
#include "plan/pipeline_config.h"
#include "plan/simulator.h"

namespace mpipe::plan {

// "RA0 F0 SA0 RG0 B0 SG0": the ops of a program separated by single spaces.
std::string program_to_string(const Program& program);

// One row per rank, one column per time unit; a compute op fills every column whose midpoint
// it covers ("F0", "B3"), idle columns show ".". A header row numbers the columns. Ends with \n.
// Rows are named "stage 0" where each rank holds one stage; with virtual stages "rank 0", and the
// ops name their chunk ("F0.1").
std::string render_grid(const SimulationResult& result);

// Everything `mpipe schedule` prints: a title line, the grid of the simulated schedule
// (F = 1, B = 2 time units per op, whatever the chunks per rank; where backwards are split,
// I = 1 and W = 1), makespan, bubble fraction (with v chunks beside the bound
// (K-1)/(v*M+K-1)), peak in-flight micro-batches per stage or rank (and, where split, peak
// micro-batches between their I and W) and the ideal speedup. Throws mpipe::Error for invalid
// K, M, v.
std::string describe_schedule(ScheduleKind kind, int num_ranks, int num_micro_batches,
                              int virtual_stages = 1);

// Speedup of a K-stage GPipe pipeline over one stage with M micro-batches and no
// communication cost: K*M / (M+K-1).
double ideal_speedup(int num_stages, int num_micro_batches);

}  // namespace mpipe::plan
