# Writes OUT, a C++ file defining mpipe::app::build_version(), from the project version and
# `git describe` (run at every build; the file is rewritten only when the version changes).
# Usage: cmake -DSOURCE_DIR=... -DPROJECT_VERSION=... -DOUT=... -P mpipe_version.cmake
execute_process(
  COMMAND git describe --tags --always --dirty --match "v[0-9]*"
  WORKING_DIRECTORY "${SOURCE_DIR}"
  OUTPUT_VARIABLE describe
  RESULT_VARIABLE status
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT status STREQUAL "0" OR describe STREQUAL "")
  set(version "${PROJECT_VERSION}")  # not a git checkout (or no git): the project version alone
elseif(describe MATCHES "^v([0-9].*)$")
  set(version "${CMAKE_MATCH_1}")  # a release tag: "0.2.0", "0.2.0-3-gabc1234"
else()
  set(version "${PROJECT_VERSION}-g${describe}")  # no tag yet: "0.1.0-gabc1234[-dirty]"
endif()
set(text "// Generated at build time by cmake/mpipe_version.cmake: the version of this build.
#include \"version.h\"

namespace mpipe::app {

const char* build_version() { return \"${version}\"; }

}  // namespace mpipe::app
")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
