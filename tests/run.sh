#!/usr/bin/env bash
# The test suite on a fresh machine: installs what it needs, then runs ruff (lint and
# format), mypy, eslint and pytest (engine, app in a real browser, static site offline).
#
#   bash tests/run.sh                  everything but the long soaks (about 7 minutes)
#   bash tests/run.sh --long           also the 1,000-action soaks
#   bash tests/run.sh tests/engine -q  a part: pytest's own arguments pass through
#
# A part of the suite costs only its part: Chromium, the static site, npm and eslint are
# set up only when the tests chosen need them (their `browser` and `site` markers).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache

# Set-up that does not depend on the rest runs side by side with it.
pids=()
in_background() { "$@" & pids+=($!); }
install_chromium() {
    # Playwright cannot download its own browser here: use Debian's.
    if [ "$(id -u)" = 0 ]; then apt_get="apt-get"; else apt_get="sudo apt-get"; fi
    $apt_get update -qq
    DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq chromium >/dev/null
}
# The browser code's linter, pinned by package-lock.json.
npm_ci() { npm ci --silent --no-audit --no-fund; }

# The whole suite needs every tier: start what does not need Python at once.
whole=1
for arg in "$@"; do [ "$arg" = "--long" ] || whole=0; done
started=""
if [ "$whole" = 1 ]; then
    command -v chromium >/dev/null 2>&1 || in_background install_chromium
    in_background npm_ci
    started="chromium npm"
fi

# The project and its test tools; skipped when this checkout's pyproject.toml is the one
# installed last (a fresh machine always installs).
stamp=".cache/pip-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $(pwd)"
installed="$(cd / && python3 -c 'import engine, os; print(os.path.dirname(os.path.dirname(engine.__file__)))' 2>/dev/null || true)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ "$installed" != "$(pwd)" ]; then
    python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
    echo "$want" >"$stamp"
fi

# Which tiers the chosen tests need (tests/conftest.py writes them; all of them when the
# collection itself fails, so that pytest reports why). The whole suite needs both: no
# collection (10 s before the linters) to find that out.
tiers_file=$(mktemp)
trap 'rm -f "$tiers_file"' EXIT
if [ "$whole" = 1 ] ||
    ! PCL_TIERS_FILE="$tiers_file" python3 -m pytest --collect-only -qq -p no:cacheprovider "$@" >/dev/null 2>&1; then
    echo "browser site" >"$tiers_file"
fi
needs() { grep -qw "$1" "$tiers_file"; }

if needs browser && [ -z "$started" ]; then
    command -v chromium >/dev/null 2>&1 || in_background install_chromium
    in_background npm_ci
fi
if needs site; then
    # The static site: Pyodide and every wheel, cached after the first run. The site
    # tests then use this build instead of building again.
    in_background python3 build.py
    export PCL_SITE_REUSE=1
fi

ruff check .
ruff format --check .
mypy
for pid in "${pids[@]}"; do wait "$pid"; done
if needs browser; then
    npx --no-install eslint
fi
# Two processes side by side (a module stays in one, with its browser and server): the
# real-browser tiers leave a core idle while they wait for a page. -n 0 runs in one.
python3 -m pytest --numprocesses=auto --maxprocesses=4 --dist=loadfile --no-loadscope-reorder "$@"
