#!/usr/bin/env bash
# A PostgreSQL server on this machine for the MLflow tracking server (`gaca mlflow --store postgresql://...`),
# for CI and for trying the cluster setup on a workstation.
#
#   bash scripts/local-postgres.sh start    # install Debian's postgresql if missing, create the cluster, the
#                                           # `gaca` role and database, start, wait until it answers
#   bash scripts/local-postgres.sh status   # whether it answers, and the URL (password masked)
#   bash scripts/local-postgres.sh stop     # stop the cluster that `start` started
#   bash scripts/local-postgres.sh restart  # stop (fast: open connections are cut) and start again
#
# Needs root on Debian 12 (bookworm). No systemd: the cluster is a Debian postgresql-common cluster of
# its own (`gaca`, beside any `main`), started with pg_ctlcluster, which runs pg_ctl as the postgres user.
# It listens on 127.0.0.1 only; the role `gaca` (password login, may create databases) owns the
# database `gaca`. The URL with the password is written to $STATE_DIR/url (mode 0600) and never printed:
#   export GACA_POSTGRES_URL=$(cat /var/lib/gaca-local-postgres/url)
#   gaca mlflow --store "$GACA_POSTGRES_URL"
#
# Environment:
#   GACA_POSTGRES_PORT       TCP port (default 5433, so that a `main` cluster on 5432 is left alone)
#   GACA_POSTGRES_STATE_DIR  where the URL file lives (default /var/lib/gaca-local-postgres)
set -euo pipefail

readonly PORT="${GACA_POSTGRES_PORT:-5433}"
readonly STATE_DIR="${GACA_POSTGRES_STATE_DIR:-/var/lib/gaca-local-postgres}"
readonly CLUSTER=gaca
readonly ROLE=gaca
readonly DATABASE=gaca

log() { printf '[local-postgres] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The newest installed major version (Debian installs server binaries under /usr/lib/postgresql/VERSION).
version() { ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n 1; }

install_packages() {
  if [[ -n "$(version)" && -x "/usr/lib/postgresql/$(version)/bin/postgres" ]] && command -v pg_ctlcluster >/dev/null; then
    return 0
  fi
  log "installing postgresql"
  # shellcheck source=scripts/apt-install.sh
  . "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh"
  apt_install postgresql postgresql-client
}

cluster_exists() { pg_lsclusters -h 2>/dev/null | awk -v c="$CLUSTER" '$2 == c { found = 1 } END { exit !found }'; }
cluster_online() { pg_lsclusters -h 2>/dev/null | awk -v c="$CLUSTER" '$2 == c && $4 ~ /online/ { found = 1 } END { exit !found }'; }
psql_admin() { runuser -u postgres -- psql -X -q -p "$PORT" -h /var/run/postgresql -v ON_ERROR_STOP=1 "$@"; }

cmd_start() {
  [[ $EUID -eq 0 ]] || die "run as root (it installs packages and starts the server as the postgres user)"
  install_packages
  local v; v=$(version)
  if ! cluster_exists; then
    log "creating cluster $v/$CLUSTER on 127.0.0.1:$PORT"
    pg_createcluster "$v" "$CLUSTER" --port "$PORT" -- --auth-local=peer --auth-host=scram-sha-256 >/dev/null
    # Loopback only. One server holds a study's writers: 64 benchmark writers and a few server workers
    # fit well within 200 connections.
    printf "listen_addresses = '127.0.0.1'\nmax_connections = 200\n" >"/etc/postgresql/$v/$CLUSTER/conf.d/gaca.conf"
  fi
  install -d -o postgres -g postgres -m 2775 /var/run/postgresql
  if cluster_online; then
    log "already running"
  else
    pg_ctlcluster "$v" "$CLUSTER" start
  fi
  local deadline=$((SECONDS + 60))
  until runuser -u postgres -- pg_isready -q -h 127.0.0.1 -p "$PORT"; do
    ((SECONDS < deadline)) || die "no answer on 127.0.0.1:$PORT after 60 s (log: /var/log/postgresql/postgresql-$v-$CLUSTER.log)"
    sleep 0.5
  done
  # The role's password lives only in the URL file (root-only); it is kept across restarts.
  mkdir -p "$STATE_DIR"
  chmod 700 "$STATE_DIR"
  local password
  password=$(sed -n 's|^postgresql://[^:]*:\([^@]*\)@.*|\1|p' "$STATE_DIR/url" 2>/dev/null || true)
  [[ -n "$password" ]] || password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
  # The password reaches psql on standard input, never on a command line that `ps` shows.
  psql_admin -d postgres <<SQL
SELECT 'CREATE ROLE $ROLE LOGIN CREATEDB' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') \gexec
ALTER ROLE $ROLE WITH LOGIN CREATEDB PASSWORD '$password';
SELECT 'CREATE DATABASE $DATABASE OWNER $ROLE' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$DATABASE') \gexec
SQL
  install -m 600 /dev/null "$STATE_DIR/url.tmp"
  printf 'postgresql://%s:%s@127.0.0.1:%s/%s\n' "$ROLE" "$password" "$PORT" "$DATABASE" >"$STATE_DIR/url.tmp"
  mv "$STATE_DIR/url.tmp" "$STATE_DIR/url"
  log "ready: postgresql://$ROLE:***@127.0.0.1:$PORT/$DATABASE (URL with the password in $STATE_DIR/url)"
}

cmd_stop() {
  local v; v=$(version)
  if [[ -n "$v" ]] && cluster_online; then
    pg_ctlcluster "$v" "$CLUSTER" stop -m fast
    log "stopped cluster $v/$CLUSTER"
  fi
}

cmd_status() {
  command -v pg_lsclusters >/dev/null || { log "PostgreSQL is not installed"; return 1; }
  cluster_exists || { log "no cluster $CLUSTER (run: bash scripts/local-postgres.sh start)"; return 1; }
  pg_lsclusters | awk -v c="$CLUSTER" 'NR == 1 || $2 == c'
  if pg_isready -q -h 127.0.0.1 -p "$PORT"; then
    log "answers: postgresql://$ROLE:***@127.0.0.1:$PORT/$DATABASE (URL in $STATE_DIR/url)"
  else
    log "does not answer on 127.0.0.1:$PORT"
    return 1
  fi
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
