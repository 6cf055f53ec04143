// Tests for memory from the op list: the moments one pass over a stage's program gives.
#include "plan/program_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "core/error.h"
#include "plan/schedule.h"

namespace mpipe::plan {
namespace {

using model::AttrValue;

using P = plan::StashProfile;

// The loop placement of `programs`, one per rank, with `chunks` chunks each.
Placement loop(const std::vector<Program>& programs, int chunks = 1) {
  return {.num_ranks = static_cast<int>(programs.size()), .virtual_stages = chunks};
}

// Chunk `chunk`'s profiles where it runs a compute op (or, with `copies`, a communication op),
// over rank `rank`'s moments.
std::vector<P> program_moments(const std::vector<Program>& programs, const Placement& placement,
                               int rank, Recompute recompute, int chunk = 0, bool copies = false) {
  std::vector<P> out;
  for (const RankMoment& m :
       rank_moments(programs, rank, placement, step_messages(programs, placement), recompute)) {
    const P& p = m.chunks[static_cast<size_t>(chunk)];
    if (m.chunk == chunk && (p.copy != P::Copy::kNone) == copies) out.push_back(p);
  }
  return out;
}

std::vector<P> moments_of(ScheduleKind kind, Recompute recompute, int k, int m, int stage) {
  std::vector<Program> programs;
  for (int s = 0; s < k; ++s) programs.push_back(make_program(kind, k, m, s));
  return program_moments(programs, loop(programs), stage, recompute);
}

// The counts of a moment (what is kept, recomputed and waiting), not its messages.
bool same_counts(const P& a, const P& b) {
  return a.inputs == b.inputs && a.full == b.full && a.recompute == b.recompute &&
         a.loss_grads == b.loss_grads && a.layer_inputs == b.layer_inputs &&
         a.layer_recompute == b.layer_recompute && a.backward == b.backward && a.loss == b.loss &&
         a.pending_weight_micro_batches == b.pending_weight_micro_batches;
}

// The moment with these counts (a default one when there is none).
P find(const std::vector<P>& moments, const P& counts) {
  for (const P& m : moments) {
    if (same_counts(m, counts)) return m;
  }
  ADD_FAILURE() << "no moment with inputs " << counts.inputs << " full " << counts.full
                << " layer_inputs " << counts.layer_inputs << " pending "
                << counts.pending_weight_micro_batches;
  return {};
}

int most(const std::vector<P>& moments, int P::*field) {
  int largest = 0;
  for (const P& m : moments) largest = std::max(largest, m.*field);
  return largest;
}

TEST(ProgramMemory, KeepsWhatTheMicroBatchesInFlightKeep) {
  // GPipe keeps all M; 1F1B keeps min(K - s, M); the last stage holds as many loss gradients,
  // less the one a backward took over (or, at a forward, whose loss is not computed yet).
  const auto gpipe = moments_of(ScheduleKind::kGpipe, Recompute::kAlways, 4, 8, 1);
  find(gpipe, {.inputs = 8, .recompute = true});
  EXPECT_EQ(most(gpipe, &P::inputs), 8);
  const auto one_f_one_b = moments_of(ScheduleKind::kOneFOneB, Recompute::kAlways, 4, 8, 1);
  find(one_f_one_b, {.inputs = 3, .recompute = true});
  EXPECT_EQ(most(one_f_one_b, &P::inputs), 3);
  EXPECT_EQ(most(moments_of(ScheduleKind::kOneFOneB, Recompute::kAlways, 4, 2, 0), &P::inputs), 2);
  const auto last = moments_of(ScheduleKind::kOneFOneB, Recompute::kNever, 4, 8, 3);
  EXPECT_EQ(most(last, &P::full), 1);
  EXPECT_EQ(most(last, &P::loss_grads), 0);
  find(moments_of(ScheduleKind::kGpipe, Recompute::kNever, 4, 8, 3),
       {.full = 8, .recompute = false, .loss_grads = 7});
  // per_layer: every layer's input of the micro-batches in flight before a backward, then of
  // the others beside the one in its per-layer backward.
  const auto per_layer = moments_of(ScheduleKind::kOneFOneB, Recompute::kPerLayer, 4, 8, 1);
  find(per_layer, {.layer_inputs = 3, .backward = false});
  find(per_layer, {.layer_inputs = 2, .layer_recompute = true});
  EXPECT_EQ(most(per_layer, &P::layer_inputs), 3);
  const auto per_layer_gpipe = moments_of(ScheduleKind::kGpipe, Recompute::kPerLayer, 4, 8, 3);
  find(per_layer_gpipe, {.loss_grads = 7, .layer_inputs = 7, .layer_recompute = true});
  // GPipe's last forward, its saved tensors dropped layer by layer.
  EXPECT_TRUE(
      find(per_layer_gpipe, {.loss_grads = 7, .layer_inputs = 8, .backward = false}).discarding);
  // except_last: the last micro-batch alone in full, or in full beside M - 1 inputs.
  const auto except_last = moments_of(ScheduleKind::kGpipe, Recompute::kExceptLast, 2, 4, 0);
  find(except_last, {.full = 1, .recompute = false});
  find(except_last, {.inputs = 3, .full = 1, .recompute = true});
}

// The messages held at a moment, as posted_activations, posted_gradients, sent_activations and
// sent_gradients.
std::vector<int> messages(const P& m) {
  return {m.posted_activations, m.posted_gradients, m.sent_activations, m.sent_gradients};
}

TEST(ProgramMemory, PlacesMessagesWhereTheExecutorHoldsThem) {
  // GPipe's backward on stage 0 of 2: gradients posted two ahead; nothing sent is held, since
  // stage 1 sent the gradient in use after it had received every activation.
  const auto gpipe = moments_of(ScheduleKind::kGpipe, Recompute::kAlways, 2, 4, 0);
  EXPECT_EQ(messages(find(gpipe, {.inputs = 4, .recompute = true})),
            (std::vector<int>{0, 2, 0, 0}));
  // GPipe's last forward: every input stored, the layers' saved tensors dropped one by one, the
  // two latest activations sent (the link holds two) not known to be received yet.
  const P last_forward = find(gpipe, {.inputs = 4, .backward = false});
  EXPECT_TRUE(last_forward.discarding);
  EXPECT_EQ(messages(last_forward), (std::vector<int>{0, 2, 2, 0}));
  // The last stage sends no activation.
  EXPECT_EQ(messages(find(moments_of(ScheduleKind::kGpipe, Recompute::kNever, 2, 4, 1),
                          {.full = 4, .loss_grads = 3, .backward = false})),
            (std::vector<int>{0, 0, 0, 0}));
  // 1F1B's steady state on a middle stage (K = 4, M = 8, stage 1, program RA0 F0 SA0 ... RG0 B0
  // SG0 RA3 F3 SA3 RG1 B1 ...): the next activation and gradient posted, and the latest
  // activation and gradient sent (as many as a Link keeps:
  // Link.KeepsTwoSendsWhileNeitherNeighbourReceives); at its first backward no gradient was sent.
  const auto steady = moments_of(ScheduleKind::kOneFOneB, Recompute::kAlways, 4, 8, 1);
  ASSERT_EQ(steady.size(), 8u);
  EXPECT_EQ(messages(steady[0]), (std::vector<int>{1, 1, 1, 0}));
  EXPECT_EQ(messages(steady[1]), (std::vector<int>{1, 1, 1, 1}));
  // At its last backward: two gradients sent (stage 0 receives them at its end).
  EXPECT_EQ(messages(steady[7]), (std::vector<int>{0, 0, 0, 2}));
  // 1F1B at M = K = 2, last stage (RA0 F0 B0 SG0 RA1 F1 B1 SG1): at B0 one activation is left to
  // receive and nothing was sent; at B1 nothing is left to receive and SG0 may be in flight.
  std::vector<P> two;
  std::ranges::copy_if(moments_of(ScheduleKind::kOneFOneB, Recompute::kAlways, 2, 2, 1),
                       std::back_inserter(two), [](const P& m) { return m.backward; });
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(messages(two[0]), (std::vector<int>{1, 0, 0, 0}));
  EXPECT_EQ(messages(two[1]), (std::vector<int>{0, 0, 0, 1}));
}

TEST(ProgramMemory, TheLastStageComputesEachMicroBatchsLossAfterItsForward) {
  // 1F1B's last stage backwards each micro-batch after its forward: at each loss one micro-batch
  // in flight, kept as the mode keeps it, and no other loss gradient waiting.
  for (const auto& [recompute, kept] :
       {std::pair{Recompute::kNever, P{.full = 1}}, std::pair{Recompute::kAlways, P{.inputs = 1}},
        std::pair{Recompute::kPerLayer, P{.layer_inputs = 1}}}) {
    const auto moments = moments_of(ScheduleKind::kOneFOneB, recompute, 2, 4, 1);
    P loss = kept;
    loss.backward = false;
    loss.loss = true;
    find(moments, loss);
    EXPECT_EQ(std::ranges::count_if(moments, [](const P& m) { return m.loss; }), 4);
  }
  // GPipe's last: the last forward's loss beside every micro-batch kept and three loss gradients;
  // under except_last the last micro-batch is kept in full.
  find(moments_of(ScheduleKind::kGpipe, Recompute::kAlways, 2, 4, 1),
       {.inputs = 4, .loss_grads = 3, .backward = false, .loss = true});
  find(moments_of(ScheduleKind::kGpipe, Recompute::kExceptLast, 2, 4, 1),
       {.inputs = 3, .full = 1, .loss_grads = 3, .backward = false, .loss = true});
  // Only the last stage computes a loss.
  EXPECT_TRUE(std::ranges::none_of(moments_of(ScheduleKind::kOneFOneB, Recompute::kNever, 2, 4, 0),
                                   [](const P& m) { return m.loss; }));
}

TEST(ProgramMemory, CountsWeightGradientsPendingAtEachOp) {
  for (int s = 0; s < 4; ++s) {
    // In ZB-H1's steady state stage s runs each I with K - s micro-batches forwarded and the W
    // ops of s earlier ones pending; 1F1B has no W ops.
    const auto zb = moments_of(ScheduleKind::kZbH1, Recompute::kAlways, 4, 8, s);
    find(zb, {.inputs = 4 - s, .recompute = true, .pending_weight_micro_batches = s});
    EXPECT_EQ(most(zb, &P::pending_weight_micro_batches), s);
    EXPECT_TRUE(std::ranges::all_of(zb, [](const P& m) { return m.splitting_backward; }));
    EXPECT_EQ(most(moments_of(ScheduleKind::kOneFOneB, Recompute::kAlways, 4, 8, s),
                   &P::pending_weight_micro_batches),
              0);
  }
  // Fewer micro-batches than stages: stage 2 of 4 holds its W ops back to the end, so its last
  // I has one micro-batch in flight beside two pending W (the formula before the pass paired the
  // most in flight with the W pending then, and missed this moment).
  const auto few = moments_of(ScheduleKind::kZbH1, Recompute::kNever, 4, 3, 2);
  find(few, {.full = 2, .pending_weight_micro_batches = 0});
  find(few, {.full = 2, .pending_weight_micro_batches = 1});
  find(few, {.full = 1, .pending_weight_micro_batches = 2});
}

TEST(ProgramMemory, BatchedWeightGradientsFromTheFirstBackwardOn) {
  std::vector<Program> programs;
  for (int s = 0; s < 2; ++s) {
    programs.push_back(make_program(ScheduleKind::kGpipe, 2, 4, s, 1, WeightGrads::kBatched));
  }
  for (const P& m : program_moments(programs, loop(programs), 0, Recompute::kNever)) {
    EXPECT_EQ(m.weight_grad_micro_batches, m.backward ? 4 : 0);
  }
}

// Grouped (M = 5 in groups of 3 and 2): a group's operands from the B that
// copies its first micro-batch (a filling moment) to its WB op; under zb_h1 from its first W, the
// I ops after it counting them.
TEST(ProgramMemory, GroupedWeightGradientsHoldOneGroupFromItsFirstCopy) {
  std::vector<Program> programs;
  for (int s = 0; s < 2; ++s) {
    programs.push_back(make_program(ScheduleKind::kGpipe, 2, 5, s, 1, WeightGrads::kGrouped, 3));
  }
  std::vector<std::pair<int, bool>> backwards;  // (operand micro-batches, filling)
  for (const P& m : program_moments(programs, loop(programs), 0, Recompute::kNever)) {
    if (m.backward) {
      backwards.emplace_back(m.weight_grad_micro_batches, m.weight_grad_operands_filling);
    }
  }
  EXPECT_EQ(backwards, (std::vector<std::pair<int, bool>>{
                           {3, true}, {3, false}, {3, false}, {2, true}, {2, false}}));
  programs.clear();
  for (int s = 0; s < 2; ++s) {
    programs.push_back(make_program(ScheduleKind::kZbH1, 2, 4, s, 1, WeightGrads::kGrouped, 2));
  }
  // Stage 1: I0 I1 W0 I2 W1 I3 WB1 W2 W3 WB3 (group 0's product after I3's SG): I2 holds group
  // 0's (W0 copied), I3 all of them.
  std::vector<int> held;
  for (const P& m : program_moments(programs, loop(programs), 1, Recompute::kNever)) {
    if (m.backward) held.push_back(m.weight_grad_micro_batches);
  }
  EXPECT_EQ(held, (std::vector<int>{0, 0, 2, 2}));
}

// Split backwards, grouped: each W op is a moment of its own (StashProfile::weight_op), the
// group's first one allocating its operands (weight_grad_operands_filling), beside the other
// micro-batches' pending W work. Stage 1 of zb_h1 at K = 2, M = 4, groups of 2:
// I0 I1 W0 I2 W1 WB1 I3 W2 W3 WB3. Accumulating, no W op is a moment.
TEST(ProgramMemory, EachWOfAGroupedChunkIsAMomentBesideTheOtherPendingW) {
  std::vector<Program> programs;
  for (int s = 0; s < 2; ++s) {
    programs.push_back(make_program(ScheduleKind::kZbH1, 2, 4, s, 1, WeightGrads::kGrouped, 2));
  }
  struct W {
    int operands;
    bool opens;
    int pending;
    bool operator==(const W&) const = default;
  };
  std::vector<W> weight_ops;
  for (const P& m : program_moments(programs, loop(programs), 1, Recompute::kNever)) {
    EXPECT_FALSE(m.weight_op && (m.backward || m.idle));
    if (m.weight_op) {
      weight_ops.push_back({m.weight_grad_micro_batches, m.weight_grad_operands_filling,
                            m.pending_weight_micro_batches});
    }
  }
  EXPECT_EQ(weight_ops, (std::vector<W>{{2, true, 1}, {2, false, 1}, {2, true, 1}, {2, false, 0}}));
  programs.clear();
  for (int s = 0; s < 2; ++s) {
    programs.push_back(make_program(ScheduleKind::kZbH1, 2, 4, s, 1, WeightGrads::kAccumulate));
  }
  EXPECT_TRUE(std::ranges::none_of(program_moments(programs, loop(programs), 1, Recompute::kNever),
                                   [](const P& m) { return m.weight_op; }));
}

// Virtual stages: each chunk's moments come from its own ops in the rank's program. Interleaved
// K = 2, v = 2, M = 4, rank 0: chunk 0 (stage 0) forwards all four before its first backward,
// chunk 1 (stage 2) holds at most two.
TEST(ProgramMemory, CountsEachChunkOfARankFromItsOwnOps) {
  std::vector<Program> programs;
  for (int r = 0; r < 2; ++r) {
    programs.push_back(make_program(ScheduleKind::kInterleaved, 2, 4, r, 2));
  }
  const auto kept = [&](int chunk) {
    std::vector<int> full;
    for (const P& m : program_moments(programs, loop(programs, 2), 0, Recompute::kNever, chunk)) {
      if (m.backward) full.push_back(m.full);
    }
    return full;
  };
  EXPECT_EQ(kept(0), (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(kept(1), (std::vector<int>{2, 1, 2, 1}));
  // Neither chunk of rank 0 is the last stage: no loss gradients; rank 1's chunk 1 is.
  for (const P& m : program_moments(programs, loop(programs, 2), 0, Recompute::kNever, 1)) {
    EXPECT_EQ(m.loss_grads, 0);
  }
  int most_loss_grads = 0;
  for (const P& m : program_moments(programs, loop(programs, 2), 1, Recompute::kNever, 1)) {
    most_loss_grads = std::max(most_loss_grads, m.loss_grads);
  }
  EXPECT_EQ(most_loss_grads, 0);  // the last stage backwards each micro-batch after its forward
}

// A rank's moments hold every chunk at once: the running one as program_moments gives it, the
// others idle with their micro-batches in flight. Rank 0 of the interleaved program above runs
// F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0.
TEST(ProgramMemory, ARanksMomentsHoldEveryChunkAtOnce) {
  std::vector<Program> programs;
  for (int r = 0; r < 2; ++r) {
    programs.push_back(make_program(ScheduleKind::kInterleaved, 2, 4, r, 2));
  }
  // At each backward: the running chunk, and the micro-batches each chunk keeps in full.
  std::vector<std::vector<int>> backwards;
  const std::vector<RankMessages> step = step_messages(programs, loop(programs, 2));
  for (const RankMoment& m :
       rank_moments(programs, 0, loop(programs, 2), step, Recompute::kNever)) {
    ASSERT_EQ(m.chunks.size(), 2u);
    const P& running = m.chunks[static_cast<size_t>(m.chunk)];
    const P& other = m.chunks[static_cast<size_t>(1 - m.chunk)];
    EXPECT_FALSE(running.idle);
    EXPECT_TRUE(other.idle);
    // The idle chunk runs nothing (its messages are its own).
    EXPECT_FALSE(other.backward || other.recompute || other.layer_recompute);
    if (running.backward) backwards.push_back({m.chunk, m.chunks[0].full, m.chunks[1].full});
  }
  EXPECT_EQ(
      backwards,
      (std::vector<std::vector<int>>{
          {1, 3, 2}, {1, 4, 1}, {0, 4, 1}, {0, 3, 2}, {1, 2, 2}, {1, 2, 1}, {0, 2, 0}, {0, 1, 0}}));
  // Each chunk counts its own messages. At rank 0's first backward (B0.1; with messages, F0.0
  // SA0.0 F1.0 SA1.0 RA0.1 F0.1 SA0.1 RA1.1 F1.1 SA1.1 F2.0 SA2.0 RG0.1 B0.1 SG0.1 F3.0 SA3.0
  // RG1.1 B1.1 SG1.1 RA2.1 ...) the link holds the two latest sends, SA1.1 and SA2.0, and the two
  // receives posted next, RG1.1 and RA2.1: chunk 0 one sent activation, chunk 1 one of each.
  const std::vector<RankMoment> all =
      rank_moments(programs, 0, loop(programs, 2), step, Recompute::kNever);
  const RankMoment first = *std::ranges::find_if(
      all, [](const RankMoment& m) { return m.chunks[static_cast<size_t>(m.chunk)].backward; });
  EXPECT_EQ(messages(first.chunks[0]), (std::vector<int>{0, 0, 1, 0}));
  EXPECT_EQ(messages(first.chunks[1]), (std::vector<int>{1, 1, 1, 0}));
  // Per-layer recompute: an idle chunk keeps every layer's input of its micro-batches in flight
  // (the same counts as the idle chunks above).
  std::vector<int> idle_at_backwards;
  for (const RankMoment& m :
       rank_moments(programs, 0, loop(programs, 2), step, Recompute::kPerLayer)) {
    const P& other = m.chunks[static_cast<size_t>(1 - m.chunk)];
    EXPECT_EQ(other.inputs + other.full, 0);
    if (m.chunks[static_cast<size_t>(m.chunk)].layer_recompute) {
      idle_at_backwards.push_back(other.layer_inputs);
    }
  }
  EXPECT_EQ(idle_at_backwards, (std::vector<int>{3, 4, 1, 2, 2, 2, 0, 0}));
}

// Each send and receive op is a moment of its own (a message of several tensors is copied there,
// beside its tensors): the chunk keeps its micro-batches in flight and runs no layer. Rank 1 of
// gpipe at K = 2, M = 2 runs RA0 F0 RA1 F1 B1 SG1 B0 SG0 (the last stage: no activation sent).
TEST(ProgramMemory, ACommunicationOpIsAMomentOfItsMessageCopy) {
  std::vector<Program> programs;
  for (int r = 0; r < 2; ++r) programs.push_back(make_program(ScheduleKind::kGpipe, 2, 2, r));
  std::vector<P::Copy> copies;
  for (const Op& op : programs[1]) {
    if (op.kind == OpKind::kRecvActivation) copies.push_back(P::Copy::kActivationIn);
    if (op.kind == OpKind::kSendGrad) copies.push_back(P::Copy::kGradientOut);
  }
  ASSERT_EQ(copies.size(), 4u);
  for (Recompute recompute : {Recompute::kNever, Recompute::kAlways}) {
    const std::vector<P> moments =
        program_moments(programs, loop(programs), 1, recompute, 0, /*copies=*/true);
    ASSERT_EQ(moments.size(), copies.size());
    std::vector<int> kept;
    for (size_t i = 0; i < moments.size(); ++i) {
      EXPECT_EQ(moments[i].copy, copies[i]);
      EXPECT_FALSE(moments[i].idle || moments[i].backward || moments[i].recompute);
      kept.push_back(moments[i].full + moments[i].inputs);
    }
    // In flight at RA0, RA1, SG1 and SG0: none, then one, then one, then none.
    EXPECT_EQ(kept, (std::vector<int>{0, 1, 1, 0}));
  }
}

}  // namespace
}  // namespace mpipe::plan
