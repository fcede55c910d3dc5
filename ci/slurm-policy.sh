# Sourced by ci/slurm-up.sh and ci/slurm-nodes.sh: the part of slurm.conf both clusters share —
# process tracking, selection, accounting, job limits and scheduling. The caller writes the
# hosts, ports, paths and timeouts.

# slurm_policy_conf STATE: print the shared lines (the job completion log goes under STATE).
slurm_policy_conf() {
  cat <<CONF
# No cgroups: qualify's probe (and on several nodes its agents) watch and enforce ceilings
# inside the allocation.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=5
JobAcctGatherParams=OverMemoryKill
# Final states: no slurmdbd here, so sacct has nothing; completed jobs stay visible to
# squeue/scontrol for MinJobAge seconds and every end is appended to the jobcomp file.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$1/log/jobcomp.txt
MinJobAge=900
MaxJobCount=100000
MaxArraySize=100001
ReturnToService=2
SchedulerType=sched/backfill
# Schedule as soon as a job ends (many short array tasks): no deferral, no minimum interval.
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0
SlurmctldTimeout=30
InactiveLimit=0
KillWait=5
CONF
}
