#!/usr/bin/env bash
# The test suite on a fresh machine: installs what it needs, then runs ruff (lint and
# format), mypy, eslint and pytest (engine, app in a real browser, static site offline).
#
#   bash tests/run.sh                  everything but the long soaks (about 15 minutes)
#   bash tests/run.sh --long           also the 1,000-action soaks
#   bash tests/run.sh tests/engine -q  a part: pytest's own arguments pass through
#
# A part of the suite costs only its part: Chromium, the static site, npm and eslint are
# set up only when the tests chosen need them (their `browser` and `site` markers).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache

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
# collection itself fails, so that pytest reports why).
tiers_file=$(mktemp)
trap 'rm -f "$tiers_file"' EXIT
if ! PCL_TIERS_FILE="$tiers_file" python3 -m pytest --collect-only -qq -p no:cacheprovider "$@" >/dev/null 2>&1; then
    echo "browser site" >"$tiers_file"
fi
needs() { grep -qw "$1" "$tiers_file"; }

# Set-up that does not depend on itself runs side by side with the linters.
pids=()
if needs browser && ! command -v chromium >/dev/null 2>&1; then
    # Playwright cannot download its own browser here: use Debian's.
    (
        if [ "$(id -u)" = 0 ]; then apt_get="apt-get"; else apt_get="sudo apt-get"; fi
        $apt_get update -qq
        DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq chromium >/dev/null
    ) &
    pids+=($!)
fi
if needs site; then
    # The static site: Pyodide and every wheel, cached after the first run. The site
    # tests then use this build instead of building again.
    python3 build.py &
    pids+=($!)
    export PCL_SITE_REUSE=1
fi
if needs browser; then
    # The browser code's linter, pinned by package-lock.json.
    npm ci --silent --no-audit --no-fund &
    pids+=($!)
fi

ruff check .
ruff format --check .
mypy
for pid in "${pids[@]}"; do wait "$pid"; done
if needs browser; then
    npx --no-install eslint
fi
python3 -m pytest "$@"
