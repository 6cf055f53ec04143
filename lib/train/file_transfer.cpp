// A file sent whole from rank to rank in blocks and written atomically (see file_transfer.h).
#include "train/file_transfer.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "checkpoint/atomic_file.h"
#include "core/error.h"
#include "core/regular_file.h"

namespace mpipe::train {
namespace {

constexpr size_t kBlockBytes = size_t{4} << 20;
constexpr size_t kBlockFloats = kBlockBytes / sizeof(float);
// The size a sender sends when it cannot open its file.
constexpr uint64_t kUnreadable = std::numeric_limits<uint64_t>::max();
// A uint64 travels as the bytes of two floats.
constexpr size_t kHeaderFloats = sizeof(uint64_t) / sizeof(float);

std::string file_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

}  // namespace

void send_file(const comm::Communicator& comm, const std::string& path, int to, int tag) {
  std::exception_ptr failure;
  std::optional<RegularFile> file;
  try {
    file.emplace(path, "not a regular file");
  } catch (...) {
    failure = std::current_exception();
  }
  const uint64_t size = file ? file->size() : kUnreadable;
  std::vector<float> header(kHeaderFloats);
  std::memcpy(header.data(), &size, sizeof size);
  const std::string label = "a copy of " + file_name(path);
  comm.isend(header, to, tag, label).wait();
  if (!file) std::rethrow_exception(failure);
  std::vector<float> block(kBlockFloats);
  for (uint64_t sent = 0; sent < size;) {
    const size_t bytes = static_cast<size_t>(std::min<uint64_t>(kBlockBytes, size - sent));
    const std::span<std::byte> out = std::as_writable_bytes(std::span(block)).first(bytes);
    if (!failure) {
      try {
        check(file->read(out) == bytes, "{}: ended early while it was sent to rank {}", path, to);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if (failure) std::fill(block.begin(), block.end(), 0.0f);
    const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
    comm.isend(std::span<const float>(block).first(floats), to, tag, label).wait();
    sent += bytes;
  }
  if (failure) std::rethrow_exception(failure);
}

checkpoint::FileDigest receive_file(const comm::Communicator& comm, const std::string& path,
                                    int from, int tag) {
  std::vector<float> header(kHeaderFloats);
  const std::string label = "a copy of " + file_name(path);
  comm.irecv(header, from, tag, label).wait();
  uint64_t size = 0;
  std::memcpy(&size, header.data(), sizeof size);
  check(size != kUnreadable, "{}: rank {} could not read its file to send it", path, from);
  std::exception_ptr failure;
  std::optional<checkpoint::AtomicFile> file;
  try {
    file.emplace(path);
  } catch (...) {
    failure = std::current_exception();
  }
  std::vector<float> block(kBlockFloats);
  for (uint64_t received = 0; received < size;) {
    const size_t bytes = static_cast<size_t>(std::min<uint64_t>(kBlockBytes, size - received));
    const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
    comm.irecv(std::span<float>(block).first(floats), from, tag, label).wait();
    if (!failure) {
      try {
        file->write(std::as_bytes(std::span(block)).first(bytes));
      } catch (...) {
        failure = std::current_exception();
      }
    }
    received += bytes;
  }
  if (failure) std::rethrow_exception(failure);
  file->commit();
  return file->digest();
}

}  // namespace mpipe::train
