#!/usr/bin/env bash
# A single-host Slurm cluster on this machine, to run lenspec's job arrays
# (docs/slurm/) for real: one munged, one slurmctld and one slurmd, a
# partition "local" with this machine's CPUs and memory, no cgroups, no
# accounting database, no systemd. Its configuration, state, sockets and
# logs live under one directory, $SLURM_LOCAL_DIR (default: .slurm/ in the
# repository).
#
#   scripts/slurm-local.sh start    install slurm-wlm and munge if missing, start (idempotent)
#   scripts/slurm-local.sh stop     cancel every job of the cluster, stop the daemons (idempotent)
#   scripts/slurm-local.sh status   which daemons run, the node's state, the queue
#   scripts/slurm-local.sh env      the line that points Slurm's commands at this cluster:
#                                   eval "$(scripts/slurm-local.sh env)"; sbatch ...
#
# Settings (environment): SLURM_LOCAL_DIR, SLURM_LOCAL_PORT (slurmctld's
# port, default 6817; slurmd takes the next one), SLURM_LOCAL_NICE (the nice
# value of the daemons and so of every job, default 10: the machine stays
# usable while jobs run).
#
# start, stop and status of one directory take turns (a lock file in it,
# flock): two starts at once start one set of daemons. The daemons of the
# directory are found by their command lines (its slurm.conf, its munge
# key), not by pid files alone.
#
# Runs as root (slurmd starts every job as its submitter, which needs root;
# CI is root). Exit status: 0 done, 1 failed, 2 bad usage, 3 Slurm cannot run
# on this machine (not Linux, no root and no sudo, no apt-get).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# An absolute path: the daemons are told it, and found again by it.
dir=$(realpath -m -- "${SLURM_LOCAL_DIR:-$repo/.slurm}")
port=${SLURM_LOCAL_PORT:-6817}
nice=${SLURM_LOCAL_NICE:-10}
conf=$dir/etc/slurm.conf
sock=$dir/munge/munge.socket.2
export SLURM_CONF=$conf
# The daemons live in sbin, which a non-login root shell may not have.
export PATH=$PATH:/usr/sbin:/sbin

say() { echo "slurm-local: $*" >&2; }
die() { say "$*"; exit 1; }
cannot() { say "cannot run Slurm here: $*"; exit 3; }

# alive PID: is PID a process that has not exited? A daemon killed a
# moment ago can stay a zombie until its parent (here init) reaps it, and
# kill -0 still finds a zombie.
alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != [ZX] ]]
}

# pids_of NAME prints the pids, one a line, of this directory's NAME
# daemons (munged, slurmctld or slurmd): live processes named NAME given
# this directory's munge key (munged) or slurm.conf (-f, the others) on
# their command line. Fails if there are none. Pid files are not trusted:
# a daemon that lost a race for one, a zombie and a reused pid are told
# apart by the command line.
pids_of() {
  local want p comm arg found=1
  local -a args
  case $1 in
    munged) want=--key-file=$dir/munge/munge.key ;;
    *) want=$conf ;;
  esac
  for p in /proc/[0-9]*; do
    { read -r comm <"$p/comm"; } 2>/dev/null || continue
    [[ $comm == "$1" ]] || continue
    { mapfile -d '' args <"$p/cmdline"; } 2>/dev/null || continue
    for arg in "${args[@]}"; do
      if [[ $arg == "$want" ]] && alive "${p#/proc/}"; then
        echo "${p#/proc/}"
        found=0
        break
      fi
    done
  done
  return $found
}

# lock takes the directory's lock (fd 9) for the rest of the script,
# waiting for another start, stop or status of it to finish. The daemons
# are started with fd 9 closed, so that they do not hold it.
lock() {
  command -v flock >/dev/null 2>&1 || cannot "flock (util-linux) is missing"
  mkdir -p "$dir" || die "cannot create $dir"
  exec 9>>"$dir/lock" || die "cannot open the lock file $dir/lock"
  flock -w 600 9 || die "another start, stop or status of $dir still runs after 600 s (it holds $dir/lock)"
}

# port_taken PORT: is anything listening on TCP PORT (IPv4 or IPv6)?
# Reads /proc/net/tcp* so that it needs neither ss nor netstat.
port_taken() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# log_tail FILE: the end of a daemon's log, for an error message.
log_tail() { [[ -s $1 ]] && { say "last lines of $1:"; tail -n 15 "$1" >&2; } || true; }

# wait_for SECONDS COMMAND...: poll COMMAND every 0.2 s until it succeeds.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

check_host() {
  [[ $(uname -s) == Linux ]] || cannot "Slurm's daemons need Linux, this is $(uname -s)"
  [[ $(id -u) -eq 0 ]] || cannot "slurmd starts jobs as their submitter and so must run as root (run this script as root, e.g. with sudo)"
  [[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65535)) || { say "SLURM_LOCAL_PORT=$port: want a TCP port number"; exit 2; }
  [[ $nice =~ ^-?[0-9]+$ ]] && ((nice >= -20 && nice <= 19)) || { say "SLURM_LOCAL_NICE=$nice: want -20..19"; exit 2; }
  # slurm.conf quotes the paths in it ("..."), and has no escape for a
  # quote, a line break or a comment's #.
  if [[ $dir == *[\"#$'\n\r']* ]]; then
    say "SLURM_LOCAL_DIR=$dir: slurm.conf cannot name a path with a double quote, # or a line break in it; choose another directory"
    exit 2
  fi
}

install() {
  local missing=() tool
  for tool in munged mungekey slurmctld slurmd sbatch; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) && return
  command -v apt-get >/dev/null 2>&1 || cannot "${missing[*]} missing and no apt-get to install slurm-wlm and munge"
  say "installing slurm-wlm and munge (missing: ${missing[*]})"
  bash "$repo/scripts/setup.sh" slurm-wlm munge || die "installing slurm-wlm and munge failed"
  for tool in "${missing[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool still missing after installing slurm-wlm and munge"
  done
}

# configure writes the munge key (once) and slurm.conf (each start: the
# machine's CPUs and memory, the ports asked for).
configure() {
  local host cpus mem
  mkdir -p "$dir"/{etc,munge,run,log,state/ctld,state/slurmd,jobs}
  chmod 0700 "$dir/munge"
  if [[ ! -s $dir/munge/munge.key ]]; then
    mungekey --create --keyfile="$dir/munge/munge.key" || die "mungekey could not create $dir/munge/munge.key"
  fi
  chmod 0600 "$dir/munge/munge.key"
  host=$(hostname -s)
  cpus=$(nproc)
  # Slurm drains a node that reports less memory than configured: leave
  # 5 % (and what the kernel keeps) out.
  mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.95 }' /proc/meminfo)
  cat >"$conf" <<EOF
# Written by scripts/slurm-local.sh: a one-node Slurm cluster on $host.
# Paths are quoted: the directory may have spaces in its name.
ClusterName=lenspec-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo="socket=$sock,cred_expire=20"
StateSaveLocation="$dir/state/ctld"
SlurmdSpoolDir="$dir/state/slurmd"
SlurmctldPidFile="$dir/run/slurmctld.pid"
SlurmdPidFile="$dir/run/slurmd.pid"
SlurmctldLogFile="$dir/log/slurmctld.log"
SlurmdLogFile="$dir/log/slurmd.log"
# No cgroups here (containers, CI): processes are tracked by parentage.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5,sched_interval=5
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
# A job that asks for no memory gets 1 GiB per CPU, not the whole node.
DefMemPerCPU=1024
ReturnToService=2
# A batch job may be requeued (scontrol requeue, --requeue); a cancelled or
# timed-out task gets SIGTERM, then SIGKILL KillWait seconds later.
JobRequeue=1
KillWait=30
# Finished jobs stay visible to scontrol for 10 minutes (no accounting).
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  check_host
  install
  local running=0 name
  for name in munged slurmctld slurmd; do
    pids_of "$name" >/dev/null && running=$((running + 1))
  done
  if ((running == 3)); then
    say "already running ($dir)"
    status
    return
  fi
  if ((running == 0)); then
    # Every port this cluster listens on must be free before anything starts.
    local p
    for p in "$port" $((port + 1)); do
      if port_taken "$p"; then
        die "TCP port $p is taken by another process (another Slurm? see: ss -ltnp 'sport = :$p'); stop it, or set SLURM_LOCAL_PORT to another port (this cluster uses it and the next)"
      fi
    done
    configure
  fi
  if ! pids_of munged >/dev/null; then
    rm -f "$sock" "$sock.lock"
    munged --key-file="$dir/munge/munge.key" --socket="$sock" --pid-file="$dir/munge/munged.pid" \
      --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" --force 9>&- ||
      { log_tail "$dir/log/munged.log"; die "munged did not start"; }
    wait_for 10 test -S "$sock" || { log_tail "$dir/log/munged.log"; die "munged's socket $sock did not appear"; }
  fi
  if ! pids_of slurmctld >/dev/null; then
    nice -n "$nice" slurmctld -f "$conf" 9>&- || { log_tail "$dir/log/slurmctld.log"; die "slurmctld did not start"; }
    wait_for 30 scontrol ping || { log_tail "$dir/log/slurmctld.log"; die "slurmctld does not answer on port $port"; }
  fi
  if ! pids_of slurmd >/dev/null; then
    nice -n "$nice" slurmd -f "$conf" 9>&- || { log_tail "$dir/log/slurmd.log"; die "slurmd did not start"; }
  fi
  # The node comes up idle (ReturnToService=2); one left down or drained by
  # an earlier run is resumed.
  local node state deadline=$((SECONDS + 60))
  node=$(hostname -s)
  while :; do
    state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
    case $state in
      idle* | mixed* | allocated*) break ;;
      down* | drain*) scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true ;;
    esac
    if ((SECONDS > deadline)); then
      log_tail "$dir/log/slurmd.log"
      die "node $node is ${state:-not registered} after 60 s"
    fi
    sleep 0.5
  done
  say "started: partition local, node $node, $(nproc) CPUs; state and logs in $dir"
  say "use it with: eval \"\$($0 env)\""
}

# job_ids prints the ids of the cluster's unfinished jobs.
job_ids() { squeue -h -o %A 2>/dev/null || true; }

# no_jobs: has the cluster no unfinished job left? (Asked anew each time.)
no_jobs() { [[ -z $(job_ids) ]]; }

# any_alive PID...: is one of them still running?
any_alive() {
  local pid
  for pid; do alive "$pid" && return 0; done
  return 1
}

stop() {
  local name pid deadline
  local -a pids
  if pids_of slurmctld >/dev/null && ! no_jobs; then
    say "cancelling $(job_ids | wc -l) unfinished jobs"
    scancel --full $(job_ids) 2>/dev/null || true
    # Let their processes get SIGTERM and exit (KillWait is 30 s).
    wait_for 45 no_jobs || say "jobs still ending after 45 s: $(job_ids | tr '\n' ' ')"
  fi
  for name in slurmd slurmctld munged; do
    mapfile -t pids < <(pids_of "$name" || true)
    ((${#pids[@]} > 0)) || continue
    kill -TERM "${pids[@]}" 2>/dev/null || true
    deadline=$((SECONDS + 30))
    while any_alive "${pids[@]}" && ((SECONDS < deadline)); do sleep 0.2; done
    for pid in "${pids[@]}"; do
      if alive "$pid"; then
        say "$name ($pid) still running after 30 s: killing it"
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done
  done
  rm -f "$sock" "$sock.lock" "$dir"/run/*.pid
  say "stopped (state and logs kept in $dir)"
}

status() {
  local name pid rc=0
  for name in munged slurmctld slurmd; do
    if pid=$(pids_of "$name"); then
      echo "$name: running (pid ${pid//$'\n'/, })"
    else
      echo "$name: stopped"
      rc=1
    fi
  done
  echo "directory: $dir"
  if ((rc == 0)); then
    sinfo -N -o '%N %P %T %c %m' || rc=1
    squeue -o '%.14i %.9P %.20j %.8T %.10M %R' || rc=1
  fi
  return $rc
}

case ${1:-} in
  start) lock && start ;;
  # A directory that does not exist has no cluster to stop or show.
  stop) if [[ -d $dir ]]; then lock; fi && stop ;;
  status) if [[ -d $dir ]]; then lock; fi && status ;;
  env) echo "export SLURM_CONF=$(printf %q "$conf")" ;;
  *)
    echo "usage: $0 start|stop|status|env (state and logs in \$SLURM_LOCAL_DIR, default .slurm/)" >&2
    exit 2
    ;;
esac
