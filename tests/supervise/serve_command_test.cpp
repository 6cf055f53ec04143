// Tests for the serve command a supervisor runs: the spool it reads of it, and its bad inputs.
#include "supervise/serve_command.h"

#include <gtest/gtest.h>

#include "support/input_error_of.h"

namespace mpipe::supervise {
namespace {

using testing::input_error_of;
using Args = std::vector<std::string>;

TEST(ServeCommand, ReadsTheSpoolAndKeepsTheCommand) {
  const Args given = {"serve", "--idle-exit", "5m", "--spool=/s/spool"};
  const ServeCommand serve = parse_serve_command(given);
  EXPECT_EQ(serve.spool_dir, "/s/spool");
  EXPECT_EQ(serve.args, given);
  EXPECT_EQ(parse_serve_command({"serve", "--spool", "spool"}).spool_dir, "spool");
}

TEST(ServeCommand, TheSupervisedDaemonResumesAnExperimentAfterEveryLostPeer) {
  const ServeCommand serve = parse_serve_command({"serve", "--spool", "s", "--idle-exit=5m"});
  EXPECT_EQ(supervised_serve_command(serve),
            (Args{"serve", "--spool", "s", "--idle-exit=5m", "--resume-lost-peer"}));
  // Only the supervisor sets it.
  EXPECT_EQ(input_error_of([] {
              parse_serve_command({"serve", "--spool", "s", "--resume-lost-peer"});
            }),
            "supervise: serve option '--resume-lost-peer' is not one the supervisor knows "
            "(--spool, --idle-exit)");
}

TEST(ServeCommand, EveryBadCommandIsOneLine) {
  const auto error = [](const Args& command) {
    return input_error_of([&] { parse_serve_command(command); });
  };
  EXPECT_EQ(error({"serve"}), "supervise: serve needs --spool DIR");
  EXPECT_EQ(error({"serve", "--spool"}), "supervise: serve option --spool needs a value");
  EXPECT_EQ(error({"serve", "--spool", "s", "--poll", "1"}),
            "supervise: serve option '--poll' is not one the supervisor knows (--spool, "
            "--idle-exit)");
  EXPECT_EQ(error({"train", "exp.yaml"}),
            "supervise: the command after -- must be `train CONFIG [options]` or `serve --spool "
            "DIR [options]`, got 'train'");
}

}  // namespace
}  // namespace mpipe::supervise
