// The watchdog's roll call: a rank whose wait expired asks every rank what it is waiting for, on a
// communicator of the watchdog's own; a rank that does not answer is stopped, hung or gone.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "comm/tag_space.h"
#include "comm/watchdog_state.h"

namespace mpipe::comm {
namespace {

// Tags on the roll call's own communicator (no comm::TagSpace is needed there), within the bound
// every MPI library guarantees.
constexpr int kPingTag = 1;
constexpr int kFirstAnswerTag = 2;  // answers to this rank's n-th roll call use tag 2 + n % span,
constexpr int kAnswerTagSpan =      // so a late answer to an old roll call is never taken
    kGuaranteedTagUb - kFirstAnswerTag + 1;
constexpr int kMaxAnswerChars = 1000;
// A rank whose wait expired answers with one of these: it reports, or it leaves the report to a
// rank whose roll call reached it before its own wait expired (leaves_the_report).
constexpr std::string_view kReportingAnswer = "ending the job after ";
constexpr std::string_view kLeavingAnswer = "ending the job (another rank reports it) after ";

int answer_tag(int roll_call) { return kFirstAnswerTag + roll_call % kAnswerTagSpan; }

// What this rank tells a roll call.
std::string current_answer(const Watchdog::State& state) {
  if (!state.waiting) return "not waiting (" + state.activity() + ")";
  const double waited_s =
      std::chrono::duration<double>(WatchClock::now() - state.wait_start).count();
  std::string text = fmt::format("{}waiting {:.1f} s for {}", ending_answer_prefix(state), waited_s,
                                 describe_wait(state, *state.waiting));
  if (text.size() > kMaxAnswerChars) text.resize(kMaxAnswerChars);
  return text;
}

// Drops the answers whose sends have completed.
void reap_answers(Watchdog::State& state) {
  std::erase_if(state.answers, [](const std::unique_ptr<RollCallAnswer>& answer) {
    int done = 0;
    MPI_Test(&answer->request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

}  // namespace

void answer_roll_calls(Watchdog& watchdog) {
  Watchdog::State& state = WatchdogInternals::state(watchdog);
  if (state.roll_comm == MPI_COMM_NULL) return;
  reap_answers(state);
  while (true) {
    int arrived = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, state.roll_comm, &arrived, &status) != MPI_SUCCESS ||
        !arrived) {
      return;
    }
    int roll_call = 0;
    if (MPI_Recv(&roll_call, 1, MPI_INT, status.MPI_SOURCE, kPingTag, state.roll_comm,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      return;
    }
    if (!state.fired) state.called_before_expiry.push_back(status.MPI_SOURCE);
    auto answer = std::make_unique<RollCallAnswer>(RollCallAnswer{.text = current_answer(state)});
    MPI_Isend(answer->text.data(), static_cast<int>(answer->text.size()), MPI_CHAR,
              status.MPI_SOURCE, answer_tag(roll_call), state.roll_comm, &answer->request);
    state.answers.push_back(std::move(answer));
  }
}

std::string_view ending_answer_prefix(const Watchdog::State& state) {
  if (!state.fired) return "";
  return state.called_before_expiry.empty() ? kReportingAnswer : kLeavingAnswer;
}

bool reports(const std::string& answer) { return answer.starts_with(kReportingAnswer); }

bool leaves_the_report(const Watchdog::State& state,
                       const std::vector<std::optional<std::string>>& answers, bool was_stopped) {
  if (!state.called_before_expiry.empty()) return true;
  bool anyone_answers = false;
  for (size_t r = 0; r < answers.size(); ++r) {
    if (!answers[r]) continue;
    anyone_answers = true;
    // Not to a rank that leaves it to another: that one may have been called by this rank.
    if (static_cast<int>(r) < state.rank && reports(*answers[r])) return true;
  }
  return was_stopped && !anyone_answers && state.size > 1;  // (or no roll call is possible yet)
}

std::vector<std::optional<std::string>> roll_call(Watchdog& watchdog, double window_s) {
  Watchdog::State& state = WatchdogInternals::state(watchdog);
  if (state.roll_comm == MPI_COMM_NULL || state.size == 1) return {};
  state.ping_payload = ++state.roll_calls;
  const auto n = static_cast<size_t>(state.size);
  std::vector<std::string> buffers(n, std::string(kMaxAnswerChars, '\0'));
  std::vector<MPI_Request> receives(n, MPI_REQUEST_NULL);
  std::vector<std::optional<std::string>> answers(n);
  for (int r = 0; r < state.size; ++r) {
    if (r == state.rank) continue;
    MPI_Request ping = MPI_REQUEST_NULL;
    // The ping's payload lives in the state, so the request may be freed (left to complete).
    MPI_Isend(&state.ping_payload, 1, MPI_INT, r, kPingTag, state.roll_comm, &ping);
    MPI_Request_free(&ping);
    MPI_Irecv(buffers[static_cast<size_t>(r)].data(), kMaxAnswerChars, MPI_CHAR, r,
              answer_tag(state.roll_calls), state.roll_comm, &receives[static_cast<size_t>(r)]);
  }
  const auto deadline = WatchClock::now() + std::chrono::duration_cast<WatchClock::duration>(
                                                std::chrono::duration<double>(window_s));
  size_t missing = n - 1;
  while (missing > 0 && WatchClock::now() < deadline) {
    for (size_t r = 0; r < n; ++r) {
      if (receives[r] == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Status status;
      MPI_Test(&receives[r], &done, &status);
      if (!done) continue;
      int count = 0;
      MPI_Get_count(&status, MPI_CHAR, &count);
      answers[r] = buffers[r].substr(0, static_cast<size_t>(std::max(count, 0)));
      --missing;
    }
    answer_roll_calls(watchdog);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (MPI_Request& receive : receives) {  // cancel the receives nobody answered
    if (receive == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&receive);
    MPI_Wait(&receive, MPI_STATUS_IGNORE);
  }
  return answers;
}

}  // namespace mpipe::comm
