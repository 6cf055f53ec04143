// The `serve --spool DIR [options]` a supervisor runs under mpirun (see serve_command.h).
#include "supervise/serve_command.h"

#include "core/error.h"
#include "supervise/job_command.h"

namespace mpipe::supervise {

ServeCommand parse_serve_command(const std::vector<std::string>& command) {
  check_job_command(command, "serve");
  ServeCommand serve{.spool_dir = {}, .args = command};
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    check_input(name == "--spool" || name == "--idle-exit",
                "supervise: serve option '{}' is not one the supervisor knows (--spool, "
                "--idle-exit)",
                arg);
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else {
      check_input(i + 1 < command.size(), "supervise: serve option {} needs a value", name);
      value = command[++i];
    }
    if (name == "--spool") serve.spool_dir = value;
  }
  check_input(!serve.spool_dir.empty(), "supervise: serve needs --spool DIR");
  return serve;
}

std::vector<std::string> supervised_serve_command(const ServeCommand& serve) {
  std::vector<std::string> args = serve.args;
  args.emplace_back("--resume-lost-peer");
  return args;
}

}  // namespace mpipe::supervise
