"""The differential check against SGLang 0.5.23's real RadixCache, when a Python that can
import SGLang is named by PCL_SGLANG_PYTHON (see tests/fidelity/sglang-venv.md); skipped
otherwise."""

from __future__ import annotations

import os

import pytest

from tests.fidelity.drivers import run_driver

SGLANG_PYTHON = os.environ.get("PCL_SGLANG_PYTHON")


@pytest.mark.skipif(
    not SGLANG_PYTHON, reason="PCL_SGLANG_PYTHON (a Python with SGLang 0.5.23) not set"
)
def test_random_radix_cache_calls_agree_with_sglang_call_by_call() -> None:
    assert SGLANG_PYTHON is not None
    run_driver(SGLANG_PYTHON, "sglang_differential.py", "PCL_SGLANG_CASES")
