// A file sent whole from one rank to another over MPI, in blocks, and written atomically where it
// arrives: the peer copies of checkpoint shards and a resume's gathered files.
#pragma once

#include <functional>
#include <string>

#include "checkpoint/file_digest.h"
#include "comm/communicator.h"

namespace mpipe::train {

// How send_file and receive_file complete each message; empty: Request::wait (under the
// communicator's watchdog). A copy thread polls with a deadline of its own (BackgroundCopy).
using TransferWait = std::function<void(comm::Request&)>;

// Sends the regular file at `path` to rank `to` of `comm` with tag `tag`: its size, then its bytes
// in blocks of at most 4 MiB (as floats: MPI moves them unconverted between hosts of one
// architecture), the next block read while the last one travels, so neither side holds more than
// two blocks. A file that cannot be opened sends a
// size that says so; one that fails to read on sends the remaining blocks as zeros; either way the
// receiver is not left waiting, and the failure is thrown (mpipe::Error naming the file) after.
void send_file(const comm::Communicator& comm, const std::string& path, int to, int tag,
               const TransferWait& wait = {});

// Receives what send_file sends from rank `from` and writes it atomically at `path`
// (checkpoint::AtomicFile; its folder must exist), the next block received while one is written;
// returns the size and crc32 of what was written.
// A write that fails still takes every block before it throws, so the sender is not left waiting;
// a sender that could not open its file is an Error naming `path` and the rank.
checkpoint::FileDigest receive_file(const comm::Communicator& comm, const std::string& path,
                                    int from, int tag, const TransferWait& wait = {});

}  // namespace mpipe::train
