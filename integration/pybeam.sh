#!/usr/bin/env bash
# Starts (start) or stops (stop) Beam Python's portable job service (an
# FnApiRunner behind the job API) on loopback: the second real runner the
# integration tests submit Go pipelines to. start prints the variables the
# tests and stop read; stop the server from the same shell:
#
#   eval "$(integration/pybeam.sh start)"   # exports ASYNCBEAM_PYTHON_JOB_SERVICE=localhost:PORT
#   go test ./integration/ -run Python
#   integration/pybeam.sh stop
#
# Each start runs a server of its own, on a free port, in a directory of its
# own (ASYNCBEAM_PYBEAM_DIR): no server of another checkout, or of an older
# Beam, is ever reused. The first start makes a virtual environment with
# apache-beam at the Go module's Beam version (ASYNCBEAM_PYBEAM_VENV, by
# default under ~/.cache; 15 s to a few minutes, by the package cache);
# later starts reuse it. It needs python3 with ensurepip (Debian:
# apt-get install python3-venv, done when run as root without it) and the
# Python package index.
set -euo pipefail
version=2.78.0
venv=${ASYNCBEAM_PYBEAM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/asyncbeam-pybeam-$version}
installed() {
  [ -f "$venv/installed-$version" ] &&
    "$venv/bin/python" -c "import sys, apache_beam; sys.exit(apache_beam.__version__ != '$version')" 2>/dev/null
}
running() { # the server of directory $1, if its pid is still that server
  local pid
  pid=$(cat "$1/pid" 2>/dev/null) || return 1
  grep -qa local_job_service_main "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}
case "${1:-}" in
start)
  if ! installed; then
    if ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q python3-venv >&2 || { apt-get update -q >&2 && apt-get install -y -q python3-venv >&2; }
      else
        echo "python3 cannot make a virtual environment: apt-get install python3-venv" >&2; exit 1
      fi
    fi
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "apache-beam==$version" >&2
    touch "$venv/installed-$version"
  fi
  dir=$(mktemp -d "${TMPDIR:-/tmp}/asyncbeam-pybeam-XXXXXX")
  nohup "$venv/bin/python" -m apache_beam.runners.portability.local_job_service_main \
    --port 0 --port_file "$dir/port" >"$dir/job_service.log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 600); do
    [ -s "$dir/port" ] && break
    running "$dir" >/dev/null || break
    sleep 0.1
  done
  if [ ! -s "$dir/port" ]; then
    echo "the job service did not start within 60 s:" >&2; tail -20 "$dir/job_service.log" >&2
    if pid=$(running "$dir"); then kill "$pid"; fi
    exit 1
  fi
  echo "export ASYNCBEAM_PYTHON_JOB_SERVICE=localhost:$(cat "$dir/port") ASYNCBEAM_PYBEAM_DIR=$dir"
  ;;
stop)
  dir=${ASYNCBEAM_PYBEAM_DIR:-}
  if [ -n "$dir" ] && [ -d "$dir" ]; then
    if pid=$(running "$dir"); then kill "$pid" 2>/dev/null || true; fi
    rm -rf "$dir"
  fi
  ;;
*)
  echo "usage: $0 start|stop" >&2; exit 2
  ;;
esac
