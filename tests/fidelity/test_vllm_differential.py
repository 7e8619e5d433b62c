"""The differential checks against vLLM 0.33.0's real Scheduler, real BlockPool and real
Request (its block hashes with multimodal items and prompt embeddings), when a
Python that can import vLLM is named by PCL_VLLM_PYTHON (see docs/fidelity.md);
skipped otherwise."""

from __future__ import annotations

import os

import pytest

from tests.fidelity.drivers import run_driver

VLLM_PYTHON = os.environ.get("PCL_VLLM_PYTHON")

needs_vllm = pytest.mark.skipif(
    not VLLM_PYTHON, reason="PCL_VLLM_PYTHON (a Python with vLLM 0.33.0) not set"
)


@needs_vllm
def test_random_workloads_agree_with_vllm_step_by_step() -> None:
    assert VLLM_PYTHON is not None
    run_driver(VLLM_PYTHON, "vllm_differential.py", "PCL_VLLM_CASES")


@needs_vllm
def test_random_block_pool_calls_agree_with_vllm_call_by_call() -> None:
    assert VLLM_PYTHON is not None
    run_driver(VLLM_PYTHON, "block_pool_differential.py", "PCL_VLLM_CASES")


@needs_vllm
def test_random_multimodal_and_embedding_placements_hash_as_vllm() -> None:
    assert VLLM_PYTHON is not None
    run_driver(VLLM_PYTHON, "extra_keys_differential.py", "PCL_VLLM_CASES")
