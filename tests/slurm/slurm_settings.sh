# Sourced by the Slurm harnesses (tests/slurm/local_slurm.sh, tests/multihost/slurm_nodes.sh): the slurm.conf settings both throwaway clusters share.
# shellcheck shell=bash

# slurm_shared_settings DIR: prints them, with munged's socket in DIR and slurmctld's state in
# DIR/state: munge authentication (credentials expire after 5 s, so a requeued job is held 6 s),
# root daemons, no cgroups, per-core selection, no accounting, pmix, and schedulers that look
# every second.
slurm_shared_settings() {
  cat <<EOF
AuthType=auth/munge
AuthInfo=socket=$1/munge.sock,cred_expire=5
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$1/state
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=pmix
# Start a requeued job as soon as its hold ends (the defaults look every 30 to 60 s).
SchedulerParameters=bf_interval=1,sched_interval=1
SlurmdParameters=config_overrides
EOF
}
