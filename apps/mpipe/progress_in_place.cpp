// Whether train and serve redraw their progress line in place or print plain lines.
#include "progress_in_place.h"

#include <cstdio>
#include <cstdlib>

#include "log/progress.h"

namespace mpipe::app {

// In place on a terminal; but under mpirun a rank's stdout is a pseudo-terminal even when
// mpirun's own output goes to a file, so there we print plain lines.
bool progress_in_place() {
  return log::stream_is_terminal(stdout) && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr;
}

}  // namespace mpipe::app
