#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server for tests and benchmarks.
#
#   pg-test-server.sh start DIR   initdb + start; writes the libpq conninfo to DIR/conninfo
#                                 and prints it. A server left in DIR by an earlier run is
#                                 stopped and wiped first.
#   pg-test-server.sh stop DIR    stops it (immediate mode) and removes its data; succeeds
#                                 when nothing is running.
#   pg-test-server.sh restart DIR [SECONDS]
#                                 stops it in immediate mode (as a crash would), keeps it down
#                                 for SECONDS (default 0), and starts it again on the same data.
#
# The server listens only on a Unix socket (no TCP), trusts local connections
# as user `postgres`, and keeps PostgreSQL's durable defaults (fsync on,
# synchronous_commit on). Run as root, initdb and the server run as the
# `postgres` user (runuser); otherwise as the calling user. Data and socket
# live in DIR when that user can write there and the socket path is short
# enough, else in a fresh directory under /tmp recorded in DIR/server-dir.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PORT=5432  # only names the socket file; there is no TCP listener

usage() { echo "usage: $0 start|stop DIR | restart DIR [SECONDS]" >&2; exit 2; }
[[ $# -eq 2 || ( $# -eq 3 && $1 == restart ) ]] || usage
cmd=$1
dir=$2

as_pg() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

server_dir() {
  if [[ -f "$dir/server-dir" ]]; then cat "$dir/server-dir"; else echo "$dir/server"; fi
}

stop_server() {
  local sdir
  sdir=$(server_dir)
  if [[ -f "$sdir/data/postmaster.pid" ]]; then
    as_pg "$PG_BIN/pg_ctl" -D "$sdir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
    # pg_ctl gives up when the postmaster is already gone; kill a survivor by its pid file.
    if [[ -f "$sdir/data/postmaster.pid" ]]; then
      local pid
      pid=$(head -n 1 "$sdir/data/postmaster.pid" 2>/dev/null || true)
      if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" || true; fi
    fi
  fi
  if [[ -d "$sdir" ]]; then rm -rf "$sdir"; fi
  rm -f "$dir/server-dir" "$dir/conninfo"
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    stop_server
    sdir="$dir/server"
    mkdir -p "$sdir"
    if [[ $(id -u) -eq 0 ]]; then chown postgres "$sdir"; fi
    # A Unix socket path is limited to 107 bytes; PostgreSQL also needs the directory writable.
    if (( ${#sdir} > 80 )) || ! as_pg test -w "$sdir"; then
      rm -rf "$sdir"
      sdir=$(mktemp -d /tmp/vigil-pg.XXXXXX)
      if [[ $(id -u) -eq 0 ]]; then chown postgres "$sdir"; fi
      echo "$sdir" > "$dir/server-dir"
    fi
    as_pg "$PG_BIN/initdb" -D "$sdir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
      --no-sync >"$sdir/initdb.log" 2>&1 || { cat "$sdir/initdb.log" >&2; exit 1; }
    if ! as_pg "$PG_BIN/pg_ctl" -D "$sdir/data" -l "$sdir/server.log" -w -t 60 \
        -o "-c listen_addresses='' -k $sdir -p $PORT -c max_connections=200" start >/dev/null; then
      cat "$sdir/server.log" >&2 || true
      exit 1
    fi
    conninfo="host=$sdir port=$PORT user=postgres dbname=postgres"
    echo "$conninfo" > "$dir/conninfo"
    echo "$conninfo"
    ;;
  stop)
    [[ -d "$dir" ]] || exit 0
    stop_server
    ;;
  restart)
    sdir=$(server_dir)
    [[ -f "$sdir/data/postmaster.pid" ]] || { echo "no server runs in $dir" >&2; exit 1; }
    as_pg "$PG_BIN/pg_ctl" -D "$sdir/data" -m immediate -w -t 30 stop >/dev/null
    sleep "${3:-0}"
    as_pg "$PG_BIN/pg_ctl" -D "$sdir/data" -l "$sdir/server.log" -w -t 60 \
      -o "-c listen_addresses='' -k $sdir -p $PORT -c max_connections=200" start >/dev/null
    ;;
  *)
    usage
    ;;
esac
