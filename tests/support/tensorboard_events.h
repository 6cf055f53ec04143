// Reading a TensorBoard event file back for tests: every TFRecord's length and data CRC-32C
// checked (Boost.CRC, masked as TFRecord stores them), each record parsed with the generated
// protobuf code, and its scalars compared with the metrics.jsonl records they mirror.
#pragma once

#include <fmt/format.h>

#include <boost/crc.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "log/tensorboard_event.pb.h"

namespace mpipe::testing {

struct EventFile {
  std::vector<tensorboard::Event> events;
  std::vector<std::string> problems;  // a bad length or CRC, a torn record, an unparsable one
};

// TFRecord's mask of a CRC-32C.
inline uint32_t masked_crc32c_of(const char* bytes, size_t size) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes, size);
  const uint32_t value = crc.checksum();
  return ((value >> 15) | (value << 17)) + 0xa282ead8u;
}

inline uint64_t little_endian(const std::string& bytes, size_t at, int size) {
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
  }
  return value;
}

inline EventFile read_event_file(const std::string& path) {
  EventFile file;
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t record = file.events.size();
    if (bytes.size() - at < 12) {
      file.problems.push_back(fmt::format("record {}: torn header", record));
      break;
    }
    const uint64_t length = little_endian(bytes, at, 8);
    if (little_endian(bytes, at + 8, 4) != masked_crc32c_of(bytes.data() + at, 8)) {
      file.problems.push_back(fmt::format("record {}: bad length CRC", record));
      break;
    }
    if (bytes.size() - at - 12 < length + 4) {
      file.problems.push_back(fmt::format("record {}: torn data", record));
      break;
    }
    const char* data = bytes.data() + at + 12;
    if (little_endian(bytes, at + 12 + length, 4) != masked_crc32c_of(data, length)) {
      file.problems.push_back(fmt::format("record {}: bad data CRC", record));
    }
    tensorboard::Event event;
    if (!event.ParseFromArray(data, static_cast<int>(length))) {
      file.problems.push_back(fmt::format("record {}: not an Event", record));
    }
    file.events.push_back(event);
    at += 12 + length + 4;
  }
  return file;
}

// The one events.out.tfevents.* file in `run_dir`; empty when there is none or several.
inline std::string event_file_in(const std::string& run_dir) {
  std::string found;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
    if (entry.path().filename().string().starts_with("events.out.tfevents.")) {
      found = entry.path().string();
      ++count;
    }
  }
  return count == 1 ? found : std::string();
}

// The scalars a metrics record stands for: "<prefix><key>" (and "<key>/<i>" for a list) ->
// value, its finite numbers only; prefix "train/" or "eval/<split>/".
inline std::map<std::string, double> expected_scalars(const nlohmann::json& record) {
  const std::string prefix = record.contains("split")
                                 ? "eval/" + record["split"].get<std::string>() + "/"
                                 : std::string("train/");
  std::map<std::string, double> scalars;
  for (const auto& [key, value] : record.items()) {
    if (key == "step") continue;
    if (value.is_number()) scalars[prefix + key] = value.get<double>();
    if (!value.is_array()) continue;
    for (size_t i = 0; i < value.size(); ++i) {
      if (value[i].is_number()) scalars[fmt::format("{}{}/{}", prefix, key, i)] = value[i];
    }
  }
  return scalars;
}

// Problems of the event file against metrics.jsonl: the first event names the file version,
// then one event per record, at its step, with exactly its numbers as float32 scalars. A killed
// run (`killed`) may have written the last record's line and not its event.
inline std::vector<std::string> compare_with_metrics(const EventFile& file,
                                                     const std::string& metrics_path,
                                                     bool killed = false) {
  std::vector<std::string> problems = file.problems;
  std::vector<nlohmann::json> records;
  std::ifstream in(metrics_path);
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  if (file.events.empty() || file.events[0].file_version() != "brain.Event:2") {
    problems.push_back("the first event is not the file version brain.Event:2");
    return problems;
  }
  if (killed && file.events.size() == records.size()) records.pop_back();
  if (file.events.size() != records.size() + 1) {
    problems.push_back(fmt::format("{} scalar events for {} metrics records",
                                   file.events.size() - 1, records.size()));
    return problems;
  }
  for (size_t r = 0; r < records.size(); ++r) {
    const tensorboard::Event& event = file.events[r + 1];
    if (event.step() != records[r]["step"].get<int64_t>() || !event.has_summary()) {
      problems.push_back(fmt::format("event {}: step {}, record step {}", r + 1, event.step(),
                                     records[r]["step"].dump()));
      continue;
    }
    std::map<std::string, double> expected = expected_scalars(records[r]);
    for (const tensorboard::Summary::Value& value : event.summary().value()) {
      const auto found = expected.find(value.tag());
      if (found == expected.end()) {
        problems.push_back(fmt::format("event {}: {} is not in the record", r + 1, value.tag()));
      } else if (value.simple_value() != static_cast<float>(found->second)) {
        problems.push_back(fmt::format("event {}: {} = {}, the record's {}", r + 1, value.tag(),
                                       value.simple_value(), found->second));
      }
      if (found != expected.end()) expected.erase(found);
    }
    for (const auto& [tag, value] : expected) {
      problems.push_back(fmt::format("event {}: no scalar {} ({})", r + 1, tag, value));
    }
  }
  return problems;
}

}  // namespace mpipe::testing
