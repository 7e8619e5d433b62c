"""The differential checks against vLLM 0.33.0's real Scheduler and real BlockPool, when a
Python that can import vLLM is named by PCL_VLLM_PYTHON (see README, "Faithful to what");
skipped otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

VLLM_PYTHON = os.environ.get("PCL_VLLM_PYTHON")
HERE = Path(__file__).parent

needs_vllm = pytest.mark.skipif(
    not VLLM_PYTHON, reason="PCL_VLLM_PYTHON (a Python with vLLM 0.33.0) not set"
)


def run_driver(driver: str) -> None:
    assert VLLM_PYTHON is not None
    cases = os.environ.get("PCL_VLLM_CASES", "200")
    result = subprocess.run(
        [VLLM_PYTHON, str(HERE / driver), "--cases", cases, "--seed", "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    summary = result.stdout.strip().splitlines()[-1:] or [result.stderr[-2000:]]
    sys.stdout.write(result.stdout)
    assert result.returncode == 0, result.stdout[-4000:] or result.stderr[-4000:]
    assert " 0 differed" in summary[0]


@needs_vllm
def test_random_workloads_agree_with_vllm_step_by_step() -> None:
    run_driver("vllm_differential.py")


@needs_vllm
def test_random_block_pool_calls_agree_with_vllm_call_by_call() -> None:
    run_driver("block_pool_differential.py")
