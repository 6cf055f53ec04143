# Open MPI settings for running mpipe under mpirun; source it (`. scripts/mpi_env.sh`) before mpirun.
# shellcheck shell=sh
# Sourced by scripts/demo and the SIGTERM test; see docs/signals.md.
#
# mpirun answers a SIGTERM (also SIGINT, SIGHUP) by sending every rank SIGCONT, then SIGTERM
# odls_base_sigkill_timeout seconds later, then SIGKILL as long again after that. Open MPI's
# default of 1 s leaves a rank 1 s to finish its step and write its checkpoint; 10 s covers
# steps of several seconds. The price: mpirun always takes twice this long to exit after a
# SIGTERM, and to tear the job down after a rank dies, exits with an error (a bad input too) or
# calls MPI_Abort (20 s instead of 2 s).
# A value already in the environment is kept; `mpirun --mca odls_base_sigkill_timeout N` beats both.
export OMPI_MCA_odls_base_sigkill_timeout="${OMPI_MCA_odls_base_sigkill_timeout:-10}"
