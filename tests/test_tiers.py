"""The test command's tiers (tests/conftest.py): what a chosen part needs, and --long."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOAK = "tests/app/test_browser_playground_soak.py"


def pytest_run(tmp_path: Path, *args: str) -> tuple[str, str]:
    """Run pytest on ``args`` in a subprocess: (its output, the tiers it said it needs)."""
    tiers = tmp_path / "tiers"
    env = {**os.environ, "PCL_TIERS_FILE": str(tiers)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout, tiers.read_text().strip()


def test_each_part_of_the_suite_names_only_the_tiers_it_needs(tmp_path: Path) -> None:
    _, engine = pytest_run(tmp_path, "--collect-only", "-q", "tests/engine/test_cli.py")
    assert engine == ""
    _, site = pytest_run(tmp_path, "--collect-only", "-q", "tests/site/test_site_app.py")
    assert site == "browser site"


def test_the_long_soaks_run_only_with_long(tmp_path: Path) -> None:
    out, tiers = pytest_run(tmp_path, "-q", "-rs", "-m", "slow", SOAK)
    assert "1 skipped" in out and "--long" in out, out
    assert tiers == ""  # a skipped soak needs no browser
    _, tiers = pytest_run(tmp_path, "--collect-only", "-q", "--long", "-m", "slow", SOAK)
    assert tiers == "browser"  # with --long it runs, in panel serve's tier
