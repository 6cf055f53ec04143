// The `checkpoint:` section: how often to save, how many checkpoints to keep, and peer copies.
#include "config/bounded.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {

checkpoint::CheckpointConfig parse_checkpoint(const Field& section) {
  const MapReader map(section, {"every", "keep", "peer_copy"});
  checkpoint::CheckpointConfig config;
  if (auto f = map.get("every")) config.every = read_int(*f, at_least(0));
  if (auto f = map.get("keep")) config.keep = read_int32(*f, at_least(1));
  if (auto f = map.get("peer_copy")) config.peer_copy = f->as_bool();
  return config;
}

}  // namespace mpipe::config
