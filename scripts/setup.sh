#!/usr/bin/env bash
# Create or reuse ./.venv and install what benchwright needs: Debian packages from scripts/apt-packages.txt and
# the Python package with its extras, every Python package at the version in requirements.lock (the versions
# the tests passed with; `make lock` refreshes it), then the packages in scripts/no-deps.txt without their declared
# dependencies (`pip check` then reports maze-dataset's jupyter and ipykernel as missing: expected). A rerun with
# nothing changed takes a second.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "benchwright needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
  exit 1
fi

# Byte-compile the project's own modules (installed packages are compiled by pip), on every run: Python writes these
# on first import, except where PYTHONDONTWRITEBYTECODE is set (some CI images and sandboxes), and then every process,
# each of a build's workers too, compiled the project again (about 0.1 s a process). Only changed files are compiled;
# -q names only what fails.
compile_project() { .venv/bin/python -m compileall -q flows tasks schemas storage annotation_ui; }

stamp=.venv/.setup-stamp
want=$(cat pyproject.toml requirements.lock scripts/apt-packages.txt scripts/no-deps.txt scripts/setup.sh \
  | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/benchwright ]; then
  compile_project
  exit 0
fi

packages=$(sed 's/#.*//' scripts/apt-packages.txt | tr -s ' \n' ' ' | sed 's/^ *//; s/ *$//')
if [ -n "$packages" ]; then
  missing=$(for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
  if [ -n "$missing" ]; then
    echo "installing Debian packages: $missing"
    sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends $missing
  fi
fi

pip_install() {  # quiet on success; the whole log, less the index's location noise, on failure
  local log; log=$(mktemp)
  if ! .venv/bin/python -m pip install "$@" >"$log" 2>&1; then
    grep -v '^WARNING: Location' "$log" >&2; rm -f "$log"; exit 1
  fi
  rm -f "$log"
}

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
echo "installing Python packages into .venv (a few minutes on a fresh machine)"
pip_install -c requirements.lock -e ".[models,dev,vic,web,scale,harness]"
pip_install -c requirements.lock --no-deps -r scripts/no-deps.txt
compile_project
.venv/bin/benchwright --help >/dev/null
# Prefect's database as its migrations leave it, once per installed Prefect: a new PREFECT_HOME starts from a copy
# instead of migrating on its server's first start (flows/prefect_database.py)
.venv/bin/python -m flows.prefect_database
echo "$want" > "$stamp"
echo "benchwright is installed in .venv"
