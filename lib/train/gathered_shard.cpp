// Writing a checkpoint shard whose optimizer state the replicas hold in parts.
#include "train/gathered_shard.h"

#include "core/test_stop.h"

namespace mpipe::train {

std::optional<checkpoint::ShardRecord> write_gathered_shard(
    checkpoint::CheckpointStore& store, int64_t step, int stage,
    const std::vector<HeldTensor>& tensors, const std::map<std::string, std::string>& metadata,
    std::span<float> scratch, const comm::Communicator& replicas) {
  std::vector<size_t> sharded;  // the indices of the sharded tensors
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].sharded) sharded.push_back(i);
  }
  if (replicas.rank() != 0) {
    for (size_t i : sharded) replicas.gatherv(tensors[i].view.values, 0, {});
    return std::nullopt;
  }
  const auto gather = [&](size_t i) {
    const std::span<float> whole =
        scratch.first(static_cast<size_t>(tensors[i].view.shape.numel()));
    replicas.gatherv(tensors[i].view.values, 0, whole);
    return whole;
  };
  size_t gathered = 0;  // of `sharded`
  std::vector<checkpoint::TensorInfo> layout;
  for (const HeldTensor& tensor : tensors) layout.push_back({tensor.view.name, tensor.view.shape});
  try {
    return store.write_shard(
        step, stage, std::move(layout),
        [&](size_t i) -> std::span<const float> {
          if (i + 1 == tensors.size()) test_stop_at(TestMoment::kCheckpoint, step);
          if (!tensors[i].sharded) return tensors[i].view.values;
          const std::span<float> whole = gather(i);
          ++gathered;
          return whole;
        },
        metadata);
  } catch (...) {
    for (; gathered < sharded.size(); ++gathered) gather(sharded[gathered]);
    throw;
  }
}

}  // namespace mpipe::train
