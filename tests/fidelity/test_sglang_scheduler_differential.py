"""The differential check of our SGLang scheduler against SGLang 0.5.23's real scheduling
pieces (SchedulePolicy, PrefillAdder, ScheduleBatch, RadixCache, the allocators), when a
Python that can import SGLang is named by PCL_SGLANG_PYTHON (see
tests/fidelity/sglang-venv.md); skipped otherwise. PCL_SGLANG_SCHEDULER_CASES sets the
number of cases (200 by default)."""

from __future__ import annotations

import os

import pytest

from tests.fidelity.drivers import run_driver

SGLANG_PYTHON = os.environ.get("PCL_SGLANG_PYTHON")


@pytest.mark.skipif(
    not SGLANG_PYTHON, reason="PCL_SGLANG_PYTHON (a Python with SGLang 0.5.23) not set"
)
def test_random_workloads_schedule_as_sglang_does_step_by_step() -> None:
    assert SGLANG_PYTHON is not None
    run_driver(SGLANG_PYTHON, "sglang_scheduler_differential.py", "PCL_SGLANG_SCHEDULER_CASES")
