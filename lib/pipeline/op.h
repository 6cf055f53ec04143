// Op: one instruction of a stage's per-step program (compute or communication).
#pragma once

#include <string>
#include <vector>

namespace mpipe::pipeline {

enum class OpKind {
  kRecvActivation,  // receive micro-batch m's input from stage s-1
  kForward,         // F<m>
  kSendActivation,  // send micro-batch m's output to stage s+1
  kRecvGrad,        // receive the gradient of micro-batch m's output from stage s+1
  kBackward,        // B<m>
  kSendGrad,        // send the gradient of micro-batch m's input to stage s-1
};

struct Op {
  OpKind kind;
  int micro_batch;
  friend bool operator==(const Op&, const Op&) = default;
};

using Program = std::vector<Op>;

// "F3", "B0", "RA2", "SA2", "RG1", "SG1".
std::string to_string(const Op& op);

}  // namespace mpipe::pipeline
