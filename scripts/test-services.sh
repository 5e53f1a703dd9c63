#!/usr/bin/env bash
# The real services the fleet tests use, started on this machine in their own
# directory and ports, and stopped by their own pid files (never by name):
#   - a PostgreSQL server (Debian's postgresql) on 127.0.0.1:<free port>, trust auth,
#     one database "hone" for the shared knowledge base;
#   - munge (Slurm's authentication) on its own socket and key;
#   - a one-node Slurm cluster: slurmctld and slurmd (node "hone1", this machine's
#     CPUs) on free ports, partition "hone".
#
#   scripts/test-services.sh start DIR   # prints the environment to source (also DIR/env.sh)
#   scripts/test-services.sh stop DIR
#
# DIR/env.sh exports HONE_TEST_PG_URL, SLURM_CONF and HONE_TEST_SLURM_PARTITION: the
# tests that need a service skip without it (or fail under HONE_REQUIRE_SERVICES=1).
# Run as root (CI and developers are root here): PostgreSQL refuses root, so its
# server runs as the `postgres` user Debian's package creates.
set -euo pipefail

cmd=${1:?usage: test-services.sh start|stop DIR}
dir=${2:?usage: test-services.sh start|stop DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

stop_pid_file() {  # stop_pid_file FILE NAME: TERM, wait, then KILL that pid only
  local f=$1 name=$2 pid
  [ -s "$f" ] || return 0
  pid=$(head -1 "$f")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    echo "test-services: stopped $name ($pid)" >&2
  fi
  rm -f "$f"
}

wait_for() {  # wait_for SECONDS CMD...: until CMD succeeds
  local limit=$1; shift
  for _ in $(seq $((limit * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}

start_postgres() {
  local pg=$dir/pg port
  [ -n "$pgbin" ] || { echo "test-services: PostgreSQL is not installed (scripts/setup.sh)" >&2; return 1; }
  rm -rf "$pg"
  mkdir -p "$pg/sock"
  [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$pg"
  as_pg "$pgbin/initdb" -D "$pg/data" -U hone -A trust -E UTF8 --no-locale >"$pg/initdb.log" 2>&1
  port=$(free_port)
  as_pg "$pgbin/pg_ctl" -D "$pg/data" -l "$pg/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $pg/sock -c fsync=off -c max_connections=100" start >/dev/null
  "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U hone hone
  echo "export HONE_TEST_PG_URL=postgresql://hone@127.0.0.1:$port/hone" >>"$dir/env.sh"
}

start_slurm() {
  local s=$dir/slurm ctld_port d_port cpus mem host
  command -v slurmctld >/dev/null || { echo "test-services: Slurm is not installed (scripts/setup.sh)" >&2; return 1; }
  rm -rf "$s"
  mkdir -p "$s/munge" "$s/state" "$s/spool" "$s/log"
  chmod 700 "$s/munge"
  dd if=/dev/urandom of="$s/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$s/munge/munge.key"
  munged --force --socket="$s/munge/munge.sock" --key-file="$s/munge/munge.key" \
    --pid-file="$s/munge/munged.pid" --log-file="$s/log/munged.log" --seed-file="$s/munge/munge.seed"
  ctld_port=$(free_port)
  d_port=$(free_port)
  cpus=$(nproc)
  mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
  host=$(hostname -s)
  cat >"$s/slurm.conf" <<EOF
ClusterName=hone-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$s/munge/munge.sock
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool/%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$s/log/slurmctld.log
SlurmdLogFile=$s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
MinJobAge=3600
KillWait=10
NodeName=hone1 NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=hone Nodes=hone1 Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$s/slurm.conf
  slurmctld -f "$s/slurm.conf"
  slurmd -f "$s/slurm.conf" -N hone1
  if ! wait_for 60 bash -c 'sinfo -h -N -o "%T" | grep -qE "^(idle|mixed|allocated)"'; then
    echo "test-services: the Slurm node did not come up:" >&2
    sinfo -N >&2 || true
    tail -20 "$s/log/slurmctld.log" "$s/log/slurmd.log" >&2 || true
    return 1
  fi
  echo "export SLURM_CONF=$s/slurm.conf" >>"$dir/env.sh"
  echo "export HONE_TEST_SLURM_PARTITION=hone" >>"$dir/env.sh"
}

case "$cmd" in
  start)
    : >"$dir/env.sh"
    start_postgres
    start_slurm
    cat "$dir/env.sh"
    ;;
  stop)
    if [ -n "$pgbin" ] && [ -f "$dir/pg/data/postmaster.pid" ]; then
      as_pg "$pgbin/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null 2>&1 ||
        stop_pid_file "$dir/pg/data/postmaster.pid" postgres
      echo "test-services: stopped postgres" >&2
    fi
    stop_pid_file "$dir/slurm/slurmd.pid" slurmd
    stop_pid_file "$dir/slurm/slurmctld.pid" slurmctld
    stop_pid_file "$dir/slurm/munge/munged.pid" munged
    ;;
  *) echo "usage: test-services.sh start|stop DIR" >&2; exit 2 ;;
esac
