// Safetensors files: named f32 tensors plus string metadata, the format PyTorch/HF tools read.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/file_digest.h"
#include "core/shape.h"

namespace mpipe::checkpoint {

struct NamedTensor {
  std::string name;
  Shape shape;
  std::vector<float> values;  // row-major, shape.numel() values
};

// A named tensor's values where they already live (nothing is copied): what a checkpoint writes
// from the stage's parameters and optimizer state.
struct TensorView {
  std::string name;
  Shape shape;
  std::span<const float> values;  // row-major, shape.numel() values
};

// Views of `tensors`, valid while they are.
std::vector<TensorView> views_of(const std::vector<NamedTensor>& tensors);

// The name of the first tensor holding a NaN or an infinity, if any.
std::optional<std::string> first_non_finite(const std::vector<TensorView>& tensors);

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in the order of their data in the file
  std::map<std::string, std::string> metadata;
};

// A tensor's name and shape, without its values: the layout of a file written piece by piece.
struct TensorInfo {
  std::string name;
  Shape shape;
};

// Writes a safetensors file one tensor at a time, so the writer never holds more than the
// tensor it is given: the header (from `layout`) first, then each tensor's values in layout
// order. Atomic like write_safetensors: the file appears at `path` only on commit(), and a
// writer destroyed before that (an error, an exception) leaves nothing.
class SafetensorsWriter {
 public:
  SafetensorsWriter(std::string path, std::vector<TensorInfo> layout,
                    const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // The next tensor of the layout; its size must match its shape.
  const TensorInfo& next() const;
  void write(std::span<const float> values);
  // Checks every tensor was written, then moves the file into place.
  FileDigest commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes `tensors` (data in the given order) and `metadata` as a safetensors file:
// u64 little-endian header length, JSON header padded with spaces to a multiple of 8,
// then the raw little-endian f32 data. Streams each view with SafetensorsWriter, so nothing
// is copied. Atomic: `path` is either the whole new file or untouched. Throws mpipe::Error on
// duplicate names, values/shape mismatch or I/O failure. Returns the size and crc32 of the file
// written.
FileDigest write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                             const std::map<std::string, std::string>& metadata = {});
// The same, for tensors held by value.
FileDigest write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {});

// Reads and validates a safetensors file holding only finite F32 tensors. Throws
// mpipe::InputError with a one-line message naming the file, e.g.
// "ckpt.safetensors: truncated: header says 1024 bytes of data, file has 512" or
// "ckpt.safetensors: tensor 'layers.0.weight' holds a non-finite value (nan) at index 3". A FIFO
// or a device (/dev/zero) is refused, never waited on or read: "x: not a regular file".
SafetensorsFile read_safetensors(const std::string& path);

// Where read_safetensors_into puts a tensor: the span its values go to (shape.numel() floats,
// valid until the next call), or nullopt to skip it. May throw to refuse the tensor.
using TensorDestination =
    std::function<std::optional<std::span<float>>(const std::string& name, const Shape& shape)>;

// Reads a safetensors file like read_safetensors, but each tensor's values straight into the
// span `destination` gives for it, in the order of the data, so nothing but the header is held;
// a tensor read holding a NaN or an infinity is refused once read. Returns the metadata.
std::map<std::string, std::string> read_safetensors_into(const std::string& path,
                                                         const TensorDestination& destination);

// A tensor as the file stores it: its dtype ("F32", "U8" or "I64") and its raw little-endian
// bytes, for data that its reader converts (data::TensorFileDataset).
struct StoredTensor {
  std::string name;
  std::string dtype;
  Shape shape;
  std::vector<std::byte> bytes;
};

// The tensors `names` of a safetensors file whose tensors are F32, U8 or I64, in that order,
// read as stored (no value is checked). Throws InputError naming the file for a header
// read_safetensors would refuse (any other dtype: "... dtype F16 is not supported (only F32, U8
// or I64)"), and for a name the file lacks: "x.safetensors: no tensor 'targets' (the file holds
// inputs, labels)".
std::vector<StoredTensor> read_stored_tensors(const std::string& path,
                                              const std::vector<std::string>& names);

// Only the metadata of a safetensors file (reads and checks the header, not the data). Throws
// InputError like read_safetensors.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

// The names and shapes of a safetensors file's tensors, in the order of their data, from its
// header alone (checked as read_safetensors checks it: F32 only, the data tiling the file), so
// a file can be matched against a model before any value is read.
std::vector<TensorInfo> read_safetensors_layout(const std::string& path);

}  // namespace mpipe::checkpoint
