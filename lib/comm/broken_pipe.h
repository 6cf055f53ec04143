// A write to a lost peer's TCP connection fails (EPIPE) instead of killing the rank (SIGPIPE), so
// the watchdog names the lost peer and ends the job.
#pragma once

namespace mpipe::comm {

// Called once by comm::Environment, after MPI_Init (Open MPI connects to the peers at the first
// message), in a job of more than one process: this process ignores SIGPIPE (inherited by none
// of mpipe's children: a rank starts none). A process alone keeps the default.
//
// Why: Open MPI's TCP transport writes to its peers' sockets without MSG_NOSIGNAL, and neither
// srun (slurmstepd) nor mpirun (orted) starts its ranks with SIGPIPE ignored. When a peer's host
// is lost its kernel resets the connection, and the next write to it killed the rank by SIGPIPE
// within milliseconds, with no line of its own (srun said only "task 0: Broken pipe"): no
// MPI_Abort, so under srun nothing ended the step, whose srun then waited for the lost node until
// slurmctld set it DOWN (SlurmdTimeout, 300 s by default; in 1 of 4 losses of a node in
// tests/multihost/slurm.sh, case 5). Ignored, the write fails with EPIPE, Open MPI closes that
// connection, the wait on the peer passes its deadline, and the watchdog's line and MPI_Abort end
// the step.
void ignore_broken_pipes();

}  // namespace mpipe::comm
