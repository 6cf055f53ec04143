// Receives posted ahead: the receive ops posted when each op of a program starts.
#include "plan/receive_posting.h"

#include "core/error.h"

namespace mpipe::plan {

std::vector<int> receives_posted(const Program& program, int ahead) {
  check(ahead >= 0, "receives_posted: {} receives ahead", ahead);
  std::vector<size_t> receives;  // the receive ops' indices
  for (size_t i = 0; i < program.size(); ++i) {
    if (is_receive(program[i].kind)) receives.push_back(i);
  }
  std::vector<int> posted_at(program.size(), 0);
  size_t posted = 0, consumed = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    while (posted < receives.size() &&
           (posted - consumed < static_cast<size_t>(ahead) || receives[posted] <= i)) {
      ++posted;
    }
    posted_at[i] = static_cast<int>(posted);
    if (is_receive(program[i].kind)) ++consumed;
  }
  return posted_at;
}

}  // namespace mpipe::plan
