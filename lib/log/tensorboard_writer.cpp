// TensorBoardWriter: metrics records as protobuf Events (tensorboard_event.proto) in TFRecords.
#include "log/tensorboard_writer.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/host_clock.h"
#include "log/tensorboard_event.pb.h"
#include "log/tfrecord.h"

namespace mpipe::log {
namespace {

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A finite number of the record as a scalar (metrics.jsonl writes the others as null).
void add_scalar(tensorboard::Summary& summary, const std::string& tag,
                const nlohmann::ordered_json& number) {
  if (!number.is_number()) return;
  const double value = number.get<double>();
  if (!std::isfinite(value)) return;
  tensorboard::Summary::Value* scalar = summary.add_value();
  scalar->set_tag(tag);
  scalar->set_simple_value(static_cast<float>(value));
}

// events.out.tfevents.<seconds>.<host>.<pid>.<n>, n counting this process's writers (as
// PyTorch's SummaryWriter names its files): a resumed part started within the second its
// previous part started (a short run does) gets a file of its own, not the earlier one's.
std::string event_file_name() {
  static std::atomic<int> writers{0};
  return fmt::format("events.out.tfevents.{}.{}.{}.{}", static_cast<int64_t>(seconds_since_epoch()),
                     this_host(), this_pid(), writers++);
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& run_dir)
    : run_dir_(run_dir), path_((std::filesystem::path(run_dir) / event_file_name()).string()) {}

void TensorBoardWriter::write_event(const std::string& serialized_event) {
  out_->append(tfrecord(serialized_event));  // one write: a killed run leaves whole records
}

void TensorBoardWriter::write(const nlohmann::ordered_json& record, const std::string& prefix) {
  if (!out_) {
    std::error_code ec;
    std::filesystem::create_directories(run_dir_, ec);
    check(!ec, "{}: cannot create run directory: {}", run_dir_, ec.message());
    out_.emplace(path_);
    tensorboard::Event version;
    version.set_wall_time(seconds_since_epoch());
    version.set_file_version("brain.Event:2");
    write_event(version.SerializeAsString());
  }
  tensorboard::Event event;
  event.set_wall_time(seconds_since_epoch());
  event.set_step(record.at("step").get<int64_t>());
  tensorboard::Summary& summary = *event.mutable_summary();
  for (const auto& [key, value] : record.items()) {
    if (key == "step") continue;
    add_scalar(summary, prefix + key, value);
    if (!value.is_array()) continue;
    for (size_t i = 0; i < value.size(); ++i) {
      add_scalar(summary, fmt::format("{}{}/{}", prefix, key, i), value[i]);
    }
  }
  write_event(event.SerializeAsString());
}

}  // namespace mpipe::log
