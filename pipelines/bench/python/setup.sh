#!/usr/bin/env bash
# Installs Beam Python (for its AsyncWrapper, the bench's "python" contender)
# into a virtual environment next to this script. Python is used for nothing
# else in this project.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m venv "$here/.venv"
"$here/.venv/bin/pip" install --quiet 'apache-beam==2.78.0'
echo "installed: $("$here/.venv/bin/python" -c 'import apache_beam; print(apache_beam.__version__)')"
