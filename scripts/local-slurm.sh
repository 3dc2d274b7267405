#!/usr/bin/env bash
# A single-node SLURM cluster with accounting, for CI and for trying the SLURM path on a workstation.
# Partition `cpu` (the default) and partition `gpu` on the same node, which declares four GPUs that
# SLURM schedules and accounts (gres/gpu) with no device behind them.
#
#   bash scripts/local-slurm.sh start    # install Debian packages if missing, configure, start, wait until ready;
#                                        # on a running cluster whose config changed, restart the daemons that read it
#   bash scripts/local-slurm.sh status   # sinfo, and whether sacct answers
#   bash scripts/local-slurm.sh stop     # stop exactly the daemons that `start` started
#
# Needs root on Debian 12 (bookworm). No systemd: daemons are started by hand because policy-rc.d
# blocks service start in containers. Accounting (slurmdbd + MariaDB) is not optional: without it
# sacct fails, submitit sees every job as UNKNOWN and result() of a cancelled job never returns.
#
# Environment:
#   GACA_SLURM_STATE_DIR  PID files and daemon logs (default /run/gaca-local-slurm)
#   GACA_SLURM_DB_PORT    TCP port of the MariaDB that `start` launches (default 3306)
#   GACA_SLURM_FORCE=1    overwrite an /etc/slurm config that this script did not write
set -euo pipefail

readonly STATE_DIR="${GACA_SLURM_STATE_DIR:-/run/gaca-local-slurm}"
readonly DB_PORT="${GACA_SLURM_DB_PORT:-3306}"
readonly CONF_DIR=/etc/slurm
readonly CLUSTER=gaca
readonly PARTITION=cpu
# A second partition on the same node, for jobs that ask for GPUs: four GPUs that SLURM schedules
# and accounts as gres/gpu without any device behind them, so a CPU machine tests GPU requests.
readonly GPU_PARTITION=gpu
readonly GPUS=4
readonly MARKER="# written by gaca scripts/local-slurm.sh"
readonly PACKAGES=(munge mariadb-server slurmdbd slurmctld slurmd slurm-client)
# Daemons in start order; `stop` goes in reverse.
readonly DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

log() { printf '[local-slurm] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------- PID bookkeeping

# Whether a process exists and is not a zombie. Daemons are reparented to PID 1, which may reap
# them only seconds after they exit.
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [[ "${stat##*) }" != Z* ]]
}

# PID of a daemon this script started, if it is still that daemon (guards against PID reuse).
running_pid() {
  local name=$1 pid
  [[ -f "$STATE_DIR/$name.pid" ]] || return 1
  pid=$(<"$STATE_DIR/$name.pid")
  [[ -n "$pid" && "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$name" ]] && alive "$pid" || return 1
  echo "$pid"
}

# Start a daemon in the foreground mode of its own session, logging to the state dir.
# `setsid` execs in place (a background job of a non-interactive shell is no group leader),
# so $! is the daemon itself.
launch() {
  local name=$1; shift
  setsid "$@" </dev/null >>"$STATE_DIR/$name.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$STATE_DIR/$name.pid"
  sleep 0.2
  running_pid "$name" >/dev/null || die "$name exited at once; see $STATE_DIR/$name.log:
$(tail -n 20 "$STATE_DIR/$name.log")"
}

# Poll a command until it succeeds or the timeout (seconds) passes.
wait_for() {
  local what=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${timeout}s waiting for $what (logs in $STATE_DIR)"
    sleep 0.5
  done
}

# ---------------------------------------------------------------- install and configure

install_packages() {
  local binary missing=0
  for binary in munged mariadbd slurmdbd slurmctld slurmd sinfo sacct; do
    command -v "$binary" >/dev/null || missing=1
  done
  ((missing)) || return 0
  local start; start=$(now)
  log "installing ${PACKAGES[*]}"
  # shellcheck source=scripts/apt-install.sh
  . "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
  apt_install "${PACKAGES[@]}"
  log "installed in $(elapsed "$start") s"
}

# Names of the config files whose content `configure` changed (daemons reading them need a restart).
CHANGED=()

# Write a config file unless a foreign one (not carrying our marker) is already there; a file that
# already holds this content is left alone.
write_config() {
  local path=$1 mode=$2 content=$3
  if [[ -f "$path" ]] && ! grep -qF "$MARKER" "$path" && [[ "${GACA_SLURM_FORCE:-0}" != 1 ]]; then
    die "$path exists and was not written by this script; set GACA_SLURM_FORCE=1 to overwrite it"
  fi
  install -m "$mode" /dev/null "$path.tmp"
  printf '%s\n%s\n' "$MARKER" "$content" >"$path.tmp"
  if cmp -s "$path.tmp" "$path"; then
    rm -f "$path.tmp"
    return
  fi
  mv "$path.tmp" "$path"
  CHANGED+=("$(basename "$path")")
}

# slurmd's view of this machine, with RealMemory lowered by 15% so that a fluctuating free-memory
# reading never drains the node.
node_line() {
  local host=$1 line memory
  line=$(slurmd -C | head -n 1)
  memory=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$line")
  line=$(sed "s/RealMemory=[0-9]*/RealMemory=$((memory * 85 / 100))/; s/^NodeName=[^ ]*/NodeName=$host/" <<<"$line")
  echo "$line Gres=gpu:$GPUS NodeAddr=127.0.0.1 State=UNKNOWN"
}

configure() {
  local host db_password gpu
  host=$(hostname -s)
  mkdir -p "$CONF_DIR" /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm

  # The controller address is pinned to loopback: a workstation's hostname may resolve to a LAN
  # address (or not at all), and everything here stays on this machine.
  write_config "$CONF_DIR/slurm.conf" 644 "ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
# Short credential lifetime: a requeued job may start again on the same node after 10 s, not 120 s.
AuthInfo=cred_expire=10
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Reject a request no node can satisfy instead of leaving it pending forever.
EnforcePartLimits=ALL
# Requeue lets submitit checkpoint and resubmit preempted or timed-out jobs.
JobRequeue=1
MailProg=/bin/true
SchedulerParameters=sched_interval=2,bf_interval=1
ReturnToService=2
KillWait=5
MinJobAge=60
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=$STATE_DIR/slurmctld.daemon.pid
SlurmdPidFile=$STATE_DIR/slurmd.daemon.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
# GPUs as a generic resource (gres.conf names a placeholder file per GPU); sacct's AllocTRES then
# records gres/gpu=N for every job that got N.
GresTypes=gpu
AccountingStorageTRES=gres/gpu
$(node_line "$host")
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
# Cores may be shared by up to 4 jobs here (this machine has few), GPUs never: the GPUs alone
# decide how many GPU jobs run at once, as on a GPU partition.
PartitionName=$GPU_PARTITION Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"

  # slurmd 22.05 drops a GPU without File= (even with Count= and Flags=CountOnly) and then drains the
  # node; an empty regular file per GPU is enough for it to count them. It logs "not a valid character
  # or block device" for each: harmless here, as nothing (no cgroup device constraint) uses the devices.
  mkdir -p "$STATE_DIR/gpus"
  for ((gpu = 0; gpu < GPUS; gpu++)); do touch "$STATE_DIR/gpus/gpu$gpu"; done
  write_config "$CONF_DIR/gres.conf" 644 "NodeName=$host Name=gpu File=$STATE_DIR/gpus/gpu[0-$((GPUS - 1))]"

  # The DB password lives only in slurmdbd.conf (root-only); keep it across restarts.
  db_password=$(sed -n 's/^StoragePass=//p' "$CONF_DIR/slurmdbd.conf" 2>/dev/null || true)
  [[ -n "$db_password" ]] || db_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  write_config "$CONF_DIR/slurmdbd.conf" 600 "AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
PidFile=$STATE_DIR/slurmdbd.daemon.pid
LogFile=/var/log/slurm/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$db_password
StorageLoc=slurm_acct_db"
}

# ---------------------------------------------------------------- daemons

start_munge() {
  # The Debian package creates /etc/munge/munge.key on install; a copied machine image may lack it.
  [[ -s /etc/munge/munge.key ]] || { log "creating munge key"; mungekey --create --force; }
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
  if running_pid munged >/dev/null; then return; fi
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "using the munged that is already running"
    return
  fi
  install -d -o munge -g munge -m 755 /run/munge
  launch munged setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged --foreground
  wait_for munged 20 bash -c 'munge -n | unmunge'
}

# What slurmdbd will do: log in as `slurm` over TCP (ping alone succeeds even when login fails).
mariadb_answers() {
  MYSQL_PWD=$(sed -n 's/^StoragePass=//p' "$CONF_DIR/slurmdbd.conf") \
    mariadb --protocol=tcp -h 127.0.0.1 -P "$DB_PORT" -u slurm -e 'SELECT 1' slurm_acct_db
}

start_mariadb() {
  if ! running_pid mariadbd >/dev/null; then
    if mariadb-admin ping >/dev/null 2>&1; then
      log "using the MariaDB server that is already running"
    else
      # Debian's postinst initialises /var/lib/mysql; a machine image may have an empty data dir.
      if [[ ! -d /var/lib/mysql/mysql ]]; then
        log "initialising MariaDB data dir"
        mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db \
          >>"$STATE_DIR/mariadb-install-db.log" 2>&1 \
          || die "mariadb-install-db failed; see $STATE_DIR/mariadb-install-db.log"
      fi
      install -d -o mysql -g mysql -m 755 /run/mysqld
      launch mariadbd mariadbd --user=mysql --bind-address=127.0.0.1 --port="$DB_PORT"
      wait_for mariadbd 60 mariadb-admin ping
    fi
  fi
  # Root talks to the server over its Unix socket (unix_socket auth, Debian's default).
  local password; password=$(sed -n 's/^StoragePass=//p' "$CONF_DIR/slurmdbd.conf")
  mariadb <<SQL
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$password';
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$password';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$password';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$password';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
SQL
  wait_for "MariaDB over TCP on port $DB_PORT" 20 mariadb_answers
}

start_slurm() {
  if ! running_pid slurmdbd >/dev/null; then
    launch slurmdbd slurmdbd -D
  fi
  wait_for slurmdbd 60 sacctmgr -n list cluster
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
  fi
  running_pid slurmctld >/dev/null || launch slurmctld slurmctld -D
  wait_for slurmctld 60 scontrol ping
  if ((${#CHANGED[@]})); then
    # A node that an older config drained (e.g. GPUs it could not find) stays drained across restarts.
    scontrol update nodename="$(hostname -s)" state=resume 2>/dev/null || true
  fi
  running_pid slurmd >/dev/null || launch slurmd slurmd -D
  wait_for "node $(hostname -s) to be up" 60 node_up
  wait_for sacct 30 sacct -n -X --starttime=now-1hour
}

# Up and responding (a trailing `*` marks a node that does not respond); jobs may be running on it.
node_up() { sinfo -h -N -p "$PARTITION" -o %t | grep -qxE 'idle|mix|alloc|comp'; }

all_running() {
  local name
  for name in "${DAEMONS[@]}"; do
    case $name in
      munged) running_pid munged >/dev/null || munge -n 2>/dev/null | unmunge >/dev/null 2>&1 ;;
      mariadbd) running_pid mariadbd >/dev/null || mariadb-admin ping >/dev/null 2>&1 ;;
      *) running_pid "$name" >/dev/null ;;
    esac || return 1
  done
  node_up 2>/dev/null && sacct -n -X --starttime=now-1hour >/dev/null 2>&1
}

# ---------------------------------------------------------------- commands

cmd_start() {
  [[ $EUID -eq 0 ]] || die "run as root (it installs packages and starts system daemons)"
  mkdir -p "$STATE_DIR"
  local start ready_start; start=$(now)
  install_packages
  ready_start=$(now)
  configure
  if all_running && ((${#CHANGED[@]} == 0)); then
    log "already running"
    return 0
  fi
  if ((${#CHANGED[@]})); then
    # Daemons read their config only at start; jobs survive a restart of slurmctld and slurmd.
    log "wrote ${CHANGED[*]}; restarting the daemons that read them if they run"
    stop_daemon slurmd
    stop_daemon slurmctld
    [[ " ${CHANGED[*]} " != *" slurmdbd.conf "* ]] || stop_daemon slurmdbd
  fi
  start_munge
  start_mariadb
  start_slurm
  log "ready: daemons up in $(elapsed "$ready_start") s, $(elapsed "$start") s in all"
  sinfo
}

# Stop one daemon that `start` started (SIGTERM, SIGKILL after 10 s); nothing if it is not running.
stop_daemon() {
  local name=$1 pid tries
  pid=$(running_pid "$name") || { rm -f "$STATE_DIR/$name.pid"; return 0; }
  kill -TERM "$pid"
  for ((tries = 0; tries < 100; tries++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    log "$name ($pid) ignored SIGTERM for 10 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE_DIR/$name.pid"
  log "stopped $name ($pid)"
}

cmd_stop() {
  local index
  if [[ -d "$STATE_DIR" ]] && running_pid slurmctld >/dev/null; then
    # Jobs outlive slurmd (slurmstepd is reparented); end them while the controller still answers.
    squeue -h -o %A | xargs -r scancel 2>/dev/null || true
  fi
  for ((index = ${#DAEMONS[@]} - 1; index >= 0; index--)); do
    stop_daemon "${DAEMONS[index]}"
  done
}

cmd_status() {
  local name pid
  for name in "${DAEMONS[@]}"; do
    if pid=$(running_pid "$name"); then log "$name: running (pid $pid)"; else log "$name: not running (as started by this script)"; fi
  done
  command -v sinfo >/dev/null || { log "SLURM is not installed"; return 1; }
  sinfo || return 1
  if sacct -n -X --starttime=now-1hour >/dev/null 2>&1; then log "sacct: works"; else log "sacct: fails"; return 1; fi
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
