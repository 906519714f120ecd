#!/usr/bin/env bash
# pg.sh: Debian's PostgreSQL for the tests and `make fleet`.
#
#   scripts/pg.sh install          install Debian's postgresql when its binaries are missing (root)
#   scripts/pg.sh start DIR PORT   initdb in DIR (once) as an unprivileged user, start on 127.0.0.1:PORT;
#                                  prints the postgres:// URL of database "sandboxd"
#   scripts/pg.sh stop DIR         stop the server of DIR
#
# The tests start their own throwaway servers (internal/pgtest); this script only makes sure
# the binaries are there, and serves `make fleet`.
set -euo pipefail

log() { printf 'pg: %s\n' "$*" >&2; }

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

install() {
  if bindir >/dev/null; then
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    log "PostgreSQL's binaries are missing: install Debian's postgresql (apt-get install postgresql) as root"
    exit 1
  fi
  log "installing Debian's postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
  # Debian's package creates and may start a cluster of its own; the tests never use it.
  bindir >/dev/null || { log "postgresql installed but no initdb found"; exit 1; }
}

# as runs a command as the server's user: postgres when root (PostgreSQL refuses root).
as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local dir=$1 port=$2 bin pw
  install
  bin=$(bindir)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    pw=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    printf '%s\n' "$pw" > "$dir/pw"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir/pw"
    as "$bin/initdb" -D "$dir/data" -U postgres --auth=scram-sha-256 --pwfile="$dir/pw" -E UTF8 --no-locale >/dev/null
  fi
  pw=$(cat "$dir/pw")
  as "$bin/pg_ctl" -D "$dir/data" -o "-h 127.0.0.1 -p $port -k $dir" -l "$dir/log" -w start >/dev/null
  local url="postgres://postgres:$pw@127.0.0.1:$port"
  "$bin/psql" -X -q -d "$url/postgres" -tc "SELECT 1 FROM pg_database WHERE datname = 'sandboxd'" | grep -q 1 ||
    "$bin/psql" -X -q -d "$url/postgres" -c "CREATE DATABASE sandboxd" >/dev/null
  echo "$url/sandboxd?sslmode=disable"
}

stop() {
  local dir=$1 bin
  bin=$(bindir)
  as "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
}

case "${1:-}" in
  install) install ;;
  start) start "$2" "$3" ;;
  stop) stop "$2" ;;
  *) sed -n '2,10p' "$0" >&2; exit 2 ;;
esac
