// TensorBoardWriter: an event file (events.out.tfevents.<time>.<host>.<pid>.<n>) of scalars that
// TensorBoard reads, one record per metrics record, each flushed as it is written.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "log/append_file.h"

namespace mpipe::log {

class TensorBoardWriter {
 public:
  // The file is named at construction and opened (appending) on the first write, the run
  // directory created then.
  explicit TensorBoardWriter(const std::string& run_dir);

  // One event at record["step"] with a scalar per number of `record`: "<prefix><key>" for a
  // number, "<prefix><key>/<i>" for each number of a list; "step", strings, nulls and non-finite
  // numbers are not scalars. Scalars are float32, as TensorBoard stores them. Throws mpipe::Error
  // with the reason on I/O failure (AppendFile: the file keeps only whole records).
  void write(const nlohmann::ordered_json& record, const std::string& prefix);

  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& serialized_event);

  std::string run_dir_;
  std::string path_;
  std::optional<AppendFile> out_;
};

}  // namespace mpipe::log
