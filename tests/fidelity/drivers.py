"""Running a differential driver under another Python (one that can import the real
engine) and requiring that no case differed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def run_driver(python: str, driver: str, cases_variable: str) -> None:
    """Run ``driver`` (a file beside this one) under ``python`` with the number of cases
    in ``cases_variable`` (200 by default) and seed 0; its last line must say 0 differed."""
    cases = os.environ.get(cases_variable, "200")
    result = subprocess.run(
        [python, str(HERE / driver), "--cases", cases, "--seed", "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    summary = result.stdout.strip().splitlines()[-1:] or [result.stderr[-2000:]]
    sys.stdout.write(result.stdout)
    assert result.returncode == 0, result.stdout[-4000:] or result.stderr[-4000:]
    assert " 0 differed" in summary[0]
