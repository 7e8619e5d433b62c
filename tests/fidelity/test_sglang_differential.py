"""The differential check against SGLang 0.5.23's real RadixCache, when a Python that can
import SGLang is named by PCL_SGLANG_PYTHON (see tests/fidelity/sglang-venv.md); skipped
otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SGLANG_PYTHON = os.environ.get("PCL_SGLANG_PYTHON")
HERE = Path(__file__).parent


@pytest.mark.skipif(
    not SGLANG_PYTHON, reason="PCL_SGLANG_PYTHON (a Python with SGLang 0.5.23) not set"
)
def test_random_radix_cache_calls_agree_with_sglang_call_by_call() -> None:
    assert SGLANG_PYTHON is not None
    cases = os.environ.get("PCL_SGLANG_CASES", "200")
    result = subprocess.run(
        [SGLANG_PYTHON, str(HERE / "sglang_differential.py"), "--cases", cases, "--seed", "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    summary = result.stdout.strip().splitlines()[-1:] or [result.stderr[-2000:]]
    sys.stdout.write(result.stdout)
    assert result.returncode == 0, result.stdout[-4000:] or result.stderr[-4000:]
    assert " 0 differed" in summary[0]
