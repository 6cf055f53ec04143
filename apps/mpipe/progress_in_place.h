// Whether train and serve redraw their progress line in place or print plain lines.
#pragma once

namespace mpipe::app {

// In place on a terminal; but under mpirun a rank's stdout is a pseudo-terminal even when
// mpirun's own output goes to a file, so there we print plain lines.
bool progress_in_place();

}  // namespace mpipe::app
