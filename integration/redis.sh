#!/usr/bin/env bash
# Starts (start) or stops (stop) a throwaway Redis server on loopback for the
# tests and examples that share a rate or a cache between workers, and prints
# the variable the tests read:
#
#   eval "$(integration/redis.sh start)"   # exports ASYNCBEAM_REDIS=127.0.0.1:6390
#   go test ./...
#   integration/redis.sh stop
#
# It needs redis-server (Debian: apt-get install redis-server); it installs
# it when run as root without it. The server keeps nothing on disk. It will
# not use or stop a Redis server on the port that it did not start.
set -euo pipefail
port=${ASYNCBEAM_REDIS_PORT:-6390}
dir=${TMPDIR:-/tmp}/asyncbeam-redis-$port
# server_pid prints the process id of the Redis server on the port, if one
# answers without a password.
server_pid() {
  redis-cli -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p' || true
}
# answering: a server replies on the port (PONG, or an error such as
# NOAUTH from one with a password).
answering() { [ -n "$(server_pid)" ] || [ -n "$(redis-cli -p "$port" ping 2>/dev/null || true)" ]; }
# ours: the server on the port is the one this script started here.
ours() {
  local pid srv
  pid=$(cat "$dir/redis.pid" 2>/dev/null || true)
  srv=$(server_pid)
  [ -n "$pid" ] && [ "$pid" = "$srv" ]
}
case "${1:-}" in
start)
  if ! command -v redis-server >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -q redis-server >&2 || { apt-get update -q >&2 && apt-get install -y -q redis-server >&2; }
    else
      echo "redis-server is not installed: apt-get install redis-server" >&2; exit 1
    fi
  fi
  mkdir -p "$dir"
  # A server answering on the port is reused only if this script started it
  # (the pid in its pid file here is the server's own); the tests write and
  # delete keys, so another one is refused, not used.
  if answering; then
    if ! ours; then
      echo "port $port has a Redis server this script did not start: set ASYNCBEAM_REDIS_PORT to a free port (or, if it is one an earlier run left behind, stop it: redis-cli -p $port shutdown nosave)" >&2; exit 1
    fi
  else
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$dir" --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$port" ping >/dev/null
  fi
  echo "export ASYNCBEAM_REDIS=127.0.0.1:$port"
  ;;
stop)
  # Only a server this script started (see start).
  if ours; then
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start|stop" >&2; exit 2
  ;;
esac
