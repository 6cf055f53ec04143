// The processes mpipe supervise starts (see child_process.h).
#include "child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

extern char** environ;

namespace mpipe::app {

std::vector<char*> argv_of(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return argv;
}

pid_t spawn(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv = argv_of(args);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0)
    throw Error(fmt::format("supervise: cannot start {}: {}", args[0], strerror(error)));
  return pid;
}

std::optional<int> ended(pid_t pid) {
  int status = 0;
  const pid_t done = ::waitpid(pid, &status, WNOHANG);
  if (done == pid) return status;
  if (done < 0 && errno != EINTR)
    throw Error(fmt::format("supervise: waitpid: {}", strerror(errno)));
  return std::nullopt;
}

}  // namespace mpipe::app
