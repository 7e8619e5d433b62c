#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs, then runs
# ruff (lint and format), mypy, eslint and pytest (engine, app in a real browser,
# static site offline).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"

if ! command -v chromium >/dev/null 2>&1; then
    # Playwright cannot download its own browser here: use Debian's.
    if [ "$(id -u)" = 0 ]; then apt_get="apt-get"; else apt_get="sudo apt-get"; fi
    $apt_get update -qq
    DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq chromium >/dev/null
fi

if [ -f build.py ]; then
    # The static site: Pyodide and every wheel, cached after the first run.
    python3 build.py
fi

# The browser code's linter, pinned by package-lock.json.
npm ci --silent --no-audit --no-fund

ruff check .
ruff format --check .
mypy
npx --no-install eslint
python3 -m pytest "$@"
