// The version of this build of mpipe (CMake's project version and `git describe`).
#pragma once

namespace mpipe::app {

// "0.1.0-g1f99646", "0.1.0-g1f99646-dirty" for a modified checkout, "0.2.0" for a tagged release.
// Defined in a file generated at build time (cmake/mpipe_version.cmake).
const char* build_version();

}  // namespace mpipe::app
