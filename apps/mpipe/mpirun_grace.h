// How long mpirun leaves its ranks between the SIGTERM it sends them and the SIGKILL after it.
#pragma once

#include <optional>

namespace mpipe::app {

// Under Open MPI's mpirun (its ranks carry OMPI_MCA_orte_hnp_uri): odls_base_sigkill_timeout in
// seconds, from OMPI_MCA_odls_base_sigkill_timeout (which mpirun also sets for `--mca`), else Open
// MPI's default of 1 s (an mca-params.conf file that sets it is not visible here). Empty without
// mpirun (srun, one process), or when the variable is not a number of seconds.
std::optional<double> mpirun_kill_grace_s();

}  // namespace mpipe::app
