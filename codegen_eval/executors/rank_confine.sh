#!/bin/sh
# One MPI rank of a Slurm step (`srun --mpi=pmix ... rank_confine.sh ./prog`), confined.
# Run by slurmstepd as the job's user; $STEPDIR holds the program and the step's shared
# /tmp and /dev/shm. What holds and what cannot (docs/running-at-scale.md, "Isolation"):
#   held:  a user namespace with every capability dropped; a mount namespace that shows only
#          /usr (read-only), Open MPI's config, the step directory and the PMIx server's
#          directory (no /etc/shadow, no /home, no /root, no job spool); private IPC and UTS
#          namespaces; no new session's terminal (--new-session); the rlimits srun propagates
#   not:   the network namespace (PMIx 4 meets its server at tcp4://127.0.0.1, and ranks on
#          other nodes are reached over the network), the PID namespace (Open MPI's shared-
#          memory transport names its segments by pid: ranks in private PID namespaces
#          collide and crash), and the uid (PMIx authenticates the rank as the job's user).
set -eu
: "${STEPDIR:?rank_confine.sh: STEPDIR is not set}"
# /dev/shm per node, as on real nodes: ranks of a node share it, nodes do not.
SHM="$STEPDIR/shm/${SLURMD_NODENAME:-node}"
mkdir -p "$SHM" 2>/dev/null || true
printf '%s %s %s %s %s.%s\n' "${SLURM_STEP_NUM_TASKS:-?}" "${SLURM_CPUS_PER_TASK:-1}" \
  "${SLURM_CPUS_ON_NODE:-?}" "${SLURMD_NODENAME:-?}" "${SLURM_JOB_ID:-?}" "${SLURM_STEP_ID:-?}" \
  >"$STEPDIR/granted.${SLURM_PROCID:-0}"
exec bwrap --unshare-user --unshare-ipc --unshare-uts --unshare-cgroup-try --share-net \
  --die-with-parent --new-session --cap-drop ALL \
  --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
  --symlink usr/bin /bin --symlink usr/sbin /sbin \
  --ro-bind /etc/openmpi /etc/openmpi --ro-bind /etc/ld.so.cache /etc/ld.so.cache \
  --ro-bind-try /etc/alternatives /etc/alternatives \
  --ro-bind-try /sys/devices/system/cpu /sys/devices/system/cpu \
  --dev /dev --bind "$SHM" /dev/shm --proc /proc --bind "$STEPDIR/tmp" /tmp \
  --bind "${PMIX_SERVER_TMPDIR:-$STEPDIR/tmp}" "${PMIX_SERVER_TMPDIR:-$STEPDIR/tmp}" \
  --ro-bind "$STEPDIR/bin" /step --chdir /tmp \
  --setenv HOME /nonexistent "$@"
