#!/usr/bin/env bash
# Starts (start) or stops (stop) Beam Python's portable job service (an
# FnApiRunner behind the job API) on loopback: the second real runner the
# integration tests submit Go pipelines to, and prints the variable they
# read:
#
#   eval "$(integration/pybeam.sh start)"   # exports ASYNCBEAM_PYTHON_JOB_SERVICE=localhost:8099
#   go test ./integration/ -run Python
#   integration/pybeam.sh stop
#
# The first start makes a virtual environment with apache-beam at the Go
# module's Beam version (ASYNCBEAM_PYBEAM_VENV, default under ~/.cache; about
# a minute); later starts reuse it. It needs python3 with its venv module
# (Debian: apt-get install python3-venv; installed when run as root without
# it) and the Python package index.
set -euo pipefail
version=2.77.0
port=${ASYNCBEAM_PYBEAM_PORT:-8099}
venv=${ASYNCBEAM_PYBEAM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/asyncbeam-pybeam-$version}
dir=${TMPDIR:-/tmp}/asyncbeam-pybeam-$port
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
case "${1:-}" in
start)
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import apache_beam" 2>/dev/null; then
    # Debian's python3 has the venv module without ensurepip, which
    # python3-venv adds.
    if ! python3 -c 'import ensurepip' >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -q python3-venv >&2 || { apt-get update -q >&2 && apt-get install -y -q python3-venv >&2; }
    fi
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q "apache-beam==$version" >&2
  fi
  mkdir -p "$dir"
  if ! listening; then
    nohup "$venv/bin/python" -m apache_beam.runners.portability.local_job_service_main \
      --port "$port" >"$dir/job_service.log" 2>&1 &
    echo $! >"$dir/pid"
    for _ in $(seq 600); do listening && break; sleep 0.1; done
    listening || { echo "the job service did not listen on $port within 60 s:" >&2; tail -20 "$dir/job_service.log" >&2; exit 1; }
  fi
  echo "export ASYNCBEAM_PYTHON_JOB_SERVICE=localhost:$port"
  ;;
stop)
  if [ -f "$dir/pid" ]; then kill "$(cat "$dir/pid")" 2>/dev/null || true; fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start|stop" >&2; exit 2
  ;;
esac
