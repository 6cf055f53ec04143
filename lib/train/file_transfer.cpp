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

// Completes `request` with `wait`, or with Request::wait when it is empty.
void complete(comm::Request request, const TransferWait& wait) {
  if (wait) {
    wait(request);
  } else {
    request.wait();
  }
}

}  // namespace

void send_file(const comm::Communicator& comm, const std::string& path, int to, int tag,
               const TransferWait& wait) {
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
  complete(comm.isend(header, to, tag, label), wait);
  if (!file) std::rethrow_exception(failure);
  std::vector<float> block(kBlockFloats);
  comm::Request in_flight;  // the block before: isend sends a copy, so `block` is free at once
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
    complete(std::move(in_flight), wait);
    in_flight = comm.isend(std::span<const float>(block).first(floats), to, tag, label);
    sent += bytes;
  }
  complete(std::move(in_flight), wait);
  if (failure) std::rethrow_exception(failure);
}

checkpoint::FileDigest receive_file(const comm::Communicator& comm, const std::string& path,
                                    int from, int tag, const TransferWait& wait) {
  std::vector<float> header(kHeaderFloats);
  const std::string label = "a copy of " + file_name(path);
  complete(comm.irecv(header, from, tag, label), wait);
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
  // Two blocks: the next one is received while this one is written.
  std::vector<float> blocks[2] = {std::vector<float>(size > 0 ? kBlockFloats : 0),
                                  std::vector<float>(size > kBlockBytes ? kBlockFloats : 0)};
  const auto block_bytes = [&](uint64_t offset) {
    return static_cast<size_t>(std::min<uint64_t>(kBlockBytes, size - offset));
  };
  const auto post = [&](uint64_t offset, std::vector<float>& block) {
    const size_t floats = (block_bytes(offset) + sizeof(float) - 1) / sizeof(float);
    return comm.irecv(std::span<float>(block).first(floats), from, tag, label);
  };
  comm::Request next;
  if (size > 0) next = post(0, blocks[0]);
  for (uint64_t received = 0, index = 0; received < size; ++index) {
    const size_t bytes = block_bytes(received);
    complete(std::move(next), wait);
    if (received + bytes < size) next = post(received + bytes, blocks[(index + 1) % 2]);
    if (!failure) {
      try {
        file->write(std::as_bytes(std::span(blocks[index % 2])).first(bytes));
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
