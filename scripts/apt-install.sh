#!/usr/bin/env bash
# apt_install PACKAGE...: apt-get update and install, waiting for the package manager's lock instead of
# failing when another apt or dpkg holds it (a fresh cloud machine often runs its own updates at boot:
# "E: Could not get lock /var/lib/dpkg/lock-frontend"). Sourced by install-latex.sh, local-slurm.sh and
# local-postgres.sh. GACA_APT_LOCK_WAIT: seconds to wait in all (default 900); GACA_APT_LOCK_POLL: seconds
# between tries (default 10).
apt_install() {
  local sudo="" waited=0 limit="${GACA_APT_LOCK_WAIT:-900}" poll="${GACA_APT_LOCK_POLL:-10}" step output
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  for step in update install; do
    while true; do
      if [ "$step" = update ]; then
        output=$($sudo apt-get -o DPkg::Lock::Timeout=60 update -qq 2>&1) && break
      else
        output=$($sudo apt-get -o DPkg::Lock::Timeout=60 install -y -qq --no-install-recommends "$@" 2>&1 >/dev/null) && break
      fi
      if ! grep -q -e "Could not get lock" -e "Unable to lock" -e "is another process using it" <<<"$output"; then
        printf '%s\n' "$output" >&2
        return 1
      fi
      if awk -v w="$waited" -v l="$limit" 'BEGIN { exit !(w >= l) }'; then
        printf '%s\n' "$output" >&2
        echo "apt_install: the package manager's lock was still held after ${limit} s (GACA_APT_LOCK_WAIT)" >&2
        return 1
      fi
      echo "waiting for the package manager: another apt or dpkg holds its lock (${waited} s so far)" >&2
      sleep "$poll"
      waited=$(awk -v w="$waited" -v p="$poll" 'BEGIN { print w + p }')
    done
  done
}
