// Tests that writing a stage's checkpoint shard streams the live parameters and optimizer state,
// and a resume reads them straight back into place: the heap bytes allocated while either runs
// stay far below one copy of that state. This test executable counts every operator new
// (replaced below) to measure them.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "nn/linear.h"
#include "optim/optimizer.h"
#include "pipeline/stage.h"
#include "support/temp_dir.h"
#include "train/stage_tensors.h"

namespace {

// Bytes held by operator new now, and the most held since the last reset.
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

void count_allocation(void* p) {
  const auto bytes = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t live = g_live_bytes.fetch_add(bytes) + bytes;
  int64_t peak = g_peak_bytes.load();
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
  }
}

// Most bytes held by operator new while `action` ran, beyond those held when it began.
template <typename Action>
int64_t peak_new_bytes_during(Action action) {
  const int64_t before = g_live_bytes.load();
  g_peak_bytes.store(before);
  action();
  return g_peak_bytes.load() - before;
}

}  // namespace

void* operator new(std::size_t bytes) {
  void* p = std::malloc(std::max<std::size_t>(bytes, 1));
  if (p == nullptr) throw std::bad_alloc();
  count_allocation(p);
  return p;
}

// The nothrow form too (std::stable_sort's temporary buffer uses it): its memory reaches the
// operator delete below, which frees with free(), so it must come from malloc() (under
// AddressSanitizer, whose own nothrow new would otherwise be paired with free: a mismatch).
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  void* p = std::malloc(std::max<std::size_t>(bytes, 1));
  if (p != nullptr) count_allocation(p);
  return p;
}

// GCC sees free() on operator delete's argument; this operator new got it from malloc().
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}
#pragma GCC diagnostic pop

void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }

namespace mpipe::train {
namespace {

constexpr int64_t kWidth = 1024;

// One Linear(1024 -> 1024) layer (global layer 3) with Adam: 12 MiB of parameters and state.
struct AdamStage {
  AdamStage() {
    std::vector<std::unique_ptr<nn::Layer>> layers;
    layers.push_back(std::make_unique<nn::Linear>(3, Shape{kWidth}, kWidth));
    stage = std::make_unique<pipeline::Stage>(std::move(layers), plan::Recompute::kNever, 1);
    stage->params().initialize(5);
    optimizer = optim::Optimizer::make(optim::OptimizerConfig{}, stage->params().num_params());
    for (const auto& [slot, state] : optimizer->state()) {
      std::fill(state.begin(), state.end(), 0.5f);
    }
  }
  int64_t state_bytes() const {
    return static_cast<int64_t>(3 * stage->params().num_params() * sizeof(float));
  }
  std::unique_ptr<pipeline::Stage> stage;
  std::unique_ptr<optim::Optimizer> optimizer;
};

TEST(CheckpointMemory, WritingAShardAllocatesNoCopyOfTheStageState) {
  AdamStage s;
  ASSERT_GE(s.state_bytes(), int64_t{12} << 20);
  testing::TempDir dir;
  checkpoint::CheckpointStore store(dir.path().string(), 1);
  const int64_t peak = peak_new_bytes_during(
      [&] { store.write_shard(10, 0, stage_state(*s.stage, *s.optimizer, std::nullopt)); });
  // Names, shapes and the header only: well under one tensor of the state.
  EXPECT_LT(peak, s.state_bytes() / 16) << "state " << s.state_bytes() << " bytes";

  // And the shard holds the live values.
  const checkpoint::SafetensorsFile file = checkpoint::read_safetensors(store.shard_path(10, 0));
  ASSERT_EQ(file.tensors.size(), 6U);  // weight, bias, and Adam's two slots of each
  const auto weights = s.stage->params().values();
  for (const auto& tensor : file.tensors) {
    if (tensor.name == "layers.3.weight") {
      EXPECT_TRUE(std::equal(tensor.values.begin(), tensor.values.end(), weights.begin()));
    } else if (tensor.name.starts_with("optim.")) {
      EXPECT_TRUE(std::all_of(tensor.values.begin(), tensor.values.end(),
                              [](float v) { return v == 0.5f; }));
    }
  }
}

TEST(CheckpointMemory, ResumingReadsTheStateIntoPlaceWithoutACopy) {
  AdamStage s;
  testing::TempDir dir;
  checkpoint::CheckpointStore store(dir.path().string(), 1);
  const checkpoint::ShardRecord shard =
      store.write_shard(10, 0, stage_state(*s.stage, *s.optimizer, std::nullopt));
  store.commit(10, {{"num_stages", 1}}, {shard});
  const std::vector<float> saved(s.stage->params().values().begin(),
                                 s.stage->params().values().end());

  AdamStage fresh;  // other weights, the same optimizer state: zero it to see it restored
  for (const auto& [slot, state] : fresh.optimizer->state()) {
    std::fill(state.begin(), state.end(), 0.f);
  }
  fresh.stage->params().initialize(6);
  const int64_t peak = peak_new_bytes_during([&] {
    load_rank_state(
        {{.stage = fresh.stage.get(), .optimizer = fresh.optimizer.get()}},
        [&](const checkpoint::TensorDestination& into) { store.read_into(10, into); }, "ckpt",
        std::nullopt);
  });
  // The checksum's 1 MiB read buffer and the headers: under one tensor (4 MiB) of the state.
  EXPECT_LT(peak, s.state_bytes() / 8) << "state " << s.state_bytes() << " bytes";
  // Every parameter and both Adam slots, entry by entry (the padding between them is not saved).
  const auto restored = fresh.stage->params().values();
  const auto state = fresh.optimizer->state();
  for (const auto& entry : fresh.stage->params().entries()) {
    const auto offset = static_cast<size_t>(entry.offset);
    const auto numel = static_cast<size_t>(entry.shape.numel());
    EXPECT_TRUE(std::equal(saved.begin() + static_cast<std::ptrdiff_t>(offset),
                           saved.begin() + static_cast<std::ptrdiff_t>(offset + numel),
                           restored.begin() + static_cast<std::ptrdiff_t>(offset)))
        << entry.name;
    for (const auto& [slot, values] : state) {
      const auto part = values.subspan(offset, numel);
      EXPECT_EQ(std::count(part.begin(), part.end(), 0.5f), static_cast<std::ptrdiff_t>(numel))
          << slot << " " << entry.name;
    }
  }
}

}  // namespace
}  // namespace mpipe::train
