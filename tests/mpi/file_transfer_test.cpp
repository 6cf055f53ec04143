// Multi-rank tests of train::send_file and receive_file (run with 4 ranks): files of several
// blocks and of a length that is no multiple of 4 arrive byte for byte, each rank sending to the
// next in one fixed order; a sender without its file and a receiver that cannot write both fail
// after the transfer, neither left waiting.
#include "train/file_transfer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "support/temp_dir.h"
#include "support/test_files.h"

namespace mpipe::train {
namespace {

using comm::Communicator;

constexpr int kTag = 5;

// Rank r's file: 8 MiB + 3 + r bytes (three blocks, the last not a whole float), from a seed.
std::string file_of(int rank) {
  return testing::pseudo_random_bytes((size_t{8} << 20) + 3 + static_cast<size_t>(rank),
                                      static_cast<uint32_t>(rank));
}

TEST(FileTransfer, EachRanksFileArrivesWholeAtTheNext) {
  const Communicator world = Communicator::world();
  const int rank = world.rank(), size = world.size();
  testing::TempDir dir;
  std::ofstream(dir.file("mine"), std::ios::binary) << file_of(rank);
  // In one order on every rank: rank 0 to 1, 1 to 2, ..., the last to 0.
  for (int from = 0; from < size; ++from) {
    const int to = (from + 1) % size;
    if (rank == from) send_file(world, dir.file("mine"), to, kTag);
    if (rank == to) {
      const checkpoint::FileDigest digest = receive_file(world, dir.file("got"), from, kTag);
      EXPECT_EQ(testing::file_contents(dir.file("got")), file_of(from));
      EXPECT_EQ(digest, checkpoint::digest_file(dir.file("got")));
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("got.tmp-" + std::to_string(::getpid()))));
}

TEST(FileTransfer, AMissingFileFailsBothEndsAfterTheTransfer) {
  const Communicator world = Communicator::world();
  testing::TempDir dir;
  if (world.rank() == 0) {
    EXPECT_THROW(send_file(world, dir.file("missing"), 1, kTag), InputError);
  } else if (world.rank() == 1) {
    try {
      receive_file(world, dir.file("copy"), 0, kTag);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                dir.file("copy") + ": rank 0 could not read its file to send it");
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file("copy")));
  }
  world.barrier();
}

TEST(FileTransfer, AReceiverThatCannotWriteTakesEveryBlockThenFails) {
  const Communicator world = Communicator::world();
  testing::TempDir dir;
  if (world.rank() == 2) {
    std::ofstream(dir.file("mine"), std::ios::binary) << file_of(2);
    send_file(world, dir.file("mine"), 3, kTag);
  } else if (world.rank() == 3) {
    EXPECT_THROW(receive_file(world, dir.file("no_such_folder/copy"), 2, kTag), Error);
  }
  world.barrier();  // rank 2's sends all completed: it is here too
}

}  // namespace
}  // namespace mpipe::train
