// comm::ignore_broken_pipes: SIGPIPE ignored, so a write to a lost peer fails with EPIPE.
#include "comm/broken_pipe.h"

#include <signal.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace mpipe::comm {

void ignore_broken_pipes() {
  struct sigaction action {};
  action.sa_handler = SIG_IGN;
  sigemptyset(&action.sa_mask);
  check(::sigaction(SIGPIPE, &action, nullptr) == 0, "sigaction(SIGPIPE): {}",
        std::strerror(errno));
}

}  // namespace mpipe::comm
