// The trace event a program op shows as in a timeline (trace.json): one mapping for the executor,
// which records a run's ops, and `mpipe plan --trace`, which draws the predicted ones the same way.
#pragma once

#include "log/trace_recorder.h"
#include "plan/op.h"

namespace mpipe::pipeline {

// F<m> and B<m> as themselves, zb_h1's and zbv's I<m> as B<m> (its W<m> is a W of its own), a
// group's WB op as WB<m> (m its last micro-batch) and the step's batched one (-1) as W, a receive
// as the wait on it (RA<m>, RG<m>), a send as its posting (SA<m>, SG<m>).
log::TraceKind op_trace_kind(const plan::Op& op);

}  // namespace mpipe::pipeline
