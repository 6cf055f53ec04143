// agree: run a step that may fail on some ranks only, and make every rank fail with the same error.
#pragma once

#include <new>
#include <utility>

#include "comm/communicator.h"
#include "core/error.h"

namespace mpipe::comm {

// "rank 1 (pipeline rank 1, host b): " before the message of a failure on any world rank but 0
// (whose line is the job's own: rank 0 prints it), so a failure seen on one node only names that
// node.
std::string failure_prefix(const Communicator& comm);

// Collective over `comm`: runs `action` on this rank, then agrees on the outcome. If `action`
// threw on any rank, every rank throws AgreedError carrying the lowest such rank's message,
// after its failure_prefix (exit code 2 for InputError, 1 otherwise), so all ranks exit cleanly
// and nobody waits in a collective for a rank that has left. Exceptions other than mpipe::Error
// and bad_alloc pass through unchanged (they are bugs, and main aborts the job).
template <typename Action>
void agree(const Communicator& comm, Action&& action) {
  int code = 0;
  std::string message;
  try {
    std::forward<Action>(action)();
  } catch (const AgreedError&) {
    throw;  // already agreed by every rank
  } catch (const InputError& e) {
    code = 2;
    message = failure_prefix(comm) + e.what();
  } catch (const Error& e) {
    code = 1;
    message = failure_prefix(comm) + e.what();
  } catch (const std::bad_alloc&) {
    code = 1;
    message = failure_prefix(comm) + "out of memory";
  }
  auto [agreed_code, agreed_message] = comm.first_error(code, message);
  if (agreed_code != 0) throw AgreedError(agreed_message, agreed_code);
}

}  // namespace mpipe::comm
