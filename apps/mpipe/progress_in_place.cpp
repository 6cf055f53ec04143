// Whether train and serve redraw their progress line in place or print plain lines.
#include "progress_in_place.h"

#include <cstdio>
#include <cstdlib>

#include "log/progress.h"

namespace mpipe::app {

bool progress_in_place() {
  return log::stream_is_terminal(stdout) && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr;
}

}  // namespace mpipe::app
