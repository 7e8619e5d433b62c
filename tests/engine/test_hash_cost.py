"""The hashing cost a learner measures: every vLLM option named, the default measured,
what this Python cannot run named with what it needs, bad sizes refused."""

from __future__ import annotations

import builtins
import io
from typing import Any

import pytest

from engine.lab.cli import main as cli
from engine.lab.shared import hash_cost
from engine.lab.shared.hash_cost import measure_hash_cost

VLLM_OPTIONS = {"sha256", "sha256_cbor", "xxhash"}


def test_the_default_and_its_two_halves_are_measured() -> None:
    report = measure_hash_cost(block_size=16, blocks=50, repeat=1)
    names = {c.name for c in report.costs}
    assert names >= VLLM_OPTIONS and {"pickle", "SHA-256", "hash()"} <= names
    for name in ("sha256", "pickle", "SHA-256", "hash()"):
        cost = report.cost(name).us_per_block
        assert cost is not None and cost > 0


def test_an_option_this_python_cannot_run_says_what_it_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_import = builtins.__import__

    def no_optional(name: str, *args: Any, **kwargs: Any) -> Any:
        if name in ("cbor2", "xxhash"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_optional)
    report = measure_hash_cost(blocks=10, repeat=1)
    assert report.cost("xxhash").us_per_block is None
    assert report.cost("xxhash").missing == "xxhash"
    assert report.cost("sha256_cbor").missing == "cbor2"


@pytest.mark.parametrize("knobs", [{"blocks": 0}, {"blocks": 20_001}, {"block_size": 65}])
def test_a_size_out_of_range_is_refused_with_its_limits(knobs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=r"must be 1 to"):
        measure_hash_cost(**knobs)


def test_the_cli_prints_a_line_per_function_and_refuses_a_bad_size(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = io.StringIO()
    assert cli.main(["--hash-cost", "--blocks", "20"], out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == "hashing cost per block of 16 tokens (20 blocks)"
    assert [line.split()[0] for line in lines[1:]] == [
        c.name for c in measure_hash_cost(blocks=1, repeat=1).costs
    ]
    assert cli.main(["--hash-cost", "--blocks", "0"], io.StringIO()) == 2
    assert "error: blocks must be 1 to 20,000, not 0" in capsys.readouterr().err
    assert hash_cost.MAX_BLOCKS == 20_000
