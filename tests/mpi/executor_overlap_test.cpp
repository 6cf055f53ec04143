// Multi-rank test of the executor's overlap (run with 4 ranks as 4 data-parallel replicas of one
// stage): during the step's last backward, each layer's gradient bucket starts as soon as that
// layer's backward is done, before the earlier layers' backward runs.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "comm/bucketed_allreduce.h"
#include "comm/communicator.h"
#include "kernels/context.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "pipeline/executor.h"
#include "pipeline/link.h"
#include "pipeline/stage.h"
#include "plan/rank_messages.h"
#include "plan/schedule.h"

namespace mpipe::pipeline {
namespace {

// Identity layer that calls `on_backward` when its backward runs.
class Probe : public nn::Layer {
 public:
  Probe(int global_index, Shape shape, std::function<void()> on_backward)
      : Layer(global_index), shape_(std::move(shape)), on_backward_(std::move(on_backward)) {}
  std::string_view kind() const override { return "probe"; }
  Shape output_shape() const override { return shape_; }
  nn::Forward forward(const Tensor& x, const nn::LayerContext&) override {
    return {.output = x, .saved = {}};
  }
  Tensor backward(const Tensor& dy, const nn::Saved&, const nn::LayerContext&) override {
    on_backward_();
    return dy;
  }
  nn::LayerNeeds needs() const override { return {}; }  // saves and allocates nothing

 private:
  Shape shape_;
  std::function<void()> on_backward_;
};

TEST(ExecutorOverlap, StartsEachLayersBucketDuringTheLastBackward) {
  const comm::Communicator world = comm::Communicator::world();
  const comm::Communicator pipeline = world.split(world.rank(), 0, "a one-stage pipeline");
  comm::BucketedAllreduce* reduction = nullptr;
  std::vector<size_t> started_at_probe;  // buckets started when layer 0's backward ran
  std::vector<std::unique_ptr<nn::Layer>> layers;
  layers.push_back(std::make_unique<Probe>(
      0, Shape{4}, [&] { started_at_probe.push_back(reduction->num_started()); }));
  layers.push_back(std::make_unique<nn::Linear>(1, Shape{4}, 3));
  layers.push_back(std::make_unique<nn::Linear>(2, Shape{3}, 2));
  Stage stage(std::move(layers), plan::Recompute::kNever, 2);
  stage.params().initialize(5);
  Link link(pipeline, 0, plan::Placement{},
            comm::TagSpace({.kinds = kDirections, .micro_batches = 2}));
  kernels::KernelContext kernels;
  const auto loss = nn::make_loss("mse");
  Executor executor({&stage}, link, 0, plan::Placement{}, *loss, kernels);

  const RoundPlan plan{.round = 0,
                       .seed = 1,
                       .rows = {2, 2},
                       .first_example = {0, 2},
                       .stage_inputs = {{Shape{4}}},
                       .stage_output_grads = {{Shape{2}}},
                       .grad_scale = 0.25f};
  const MicroBatchData data{.inputs =
                                [](int m) {
                                  Tensor x(Shape{2, 4});
                                  x.fill(0.5f + static_cast<float>(m));
                                  return bundle_of(std::move(x));
                                },
                            .targets =
                                [](int) {
                                  return Tensor(Shape{2, 2});
                                }};
  comm::BucketedAllreduce buckets(world, rank_gradient_buckets({&stage.params()}).buckets);
  ASSERT_EQ(buckets.num_buckets(), 2u);
  reduction = &buckets;
  const plan::Program program = plan::make_program(plan::ScheduleKind::kGpipe, 1, 2, 0);
  executor.train_step(program, plan::step_messages({program}, plan::Placement{}).at(0), plan, data,
                      &buckets);
  // B0: nothing final yet; B1 (the last): layers 2 and 1 were reduced before layer 0 ran.
  EXPECT_EQ(started_at_probe, (std::vector<size_t>{0, 2}));
  buckets.finish();
  EXPECT_EQ(buckets.num_completed(), 2u);
}

}  // namespace
}  // namespace mpipe::pipeline
