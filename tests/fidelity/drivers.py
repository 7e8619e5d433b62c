"""Running a differential driver under another Python (one that can import the real
engine) and requiring that no case differed."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
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


def run_seeded_cases(
    description: str, run_case: Callable[[int], str | None], coverage: Mapping[str, int]
) -> int:
    """A driver's ``main``: ``--cases N --seed S``, one case per seed, the first five
    differences printed, then one line of what was covered; exit status 1 if any differed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0, help="first case's seed")
    args = parser.parse_args()
    failures = 0
    for seed in range(args.seed, args.seed + args.cases):
        difference = run_case(seed)
        if difference:
            failures += 1
            print(difference, flush=True)
            if failures >= 5:
                break
    covered = ", ".join(f"{name} {value}" for name, value in sorted(coverage.items()))
    print(f"{args.cases} cases from seed {args.seed}: {failures} differed ({covered})")
    return 1 if failures else 0
