"""The measured hashing cost as the page shows it: every number from the report."""

from __future__ import annotations

from app.render.chain import EXAMPLE_PROMPT_TOKENS, render_hash_cost
from engine.lab.shared.hash_cost import HashCost, HashCostReport
from tests.app.conftest import parse

REPORT = HashCostReport(
    16,
    2_000,
    (
        HashCost("sha256", "vLLM's default", 1.5),
        HashCost("xxhash", "xxHash", None, "xxhash"),
        HashCost("xxhash_cbor", "xxHash over CBOR", None, "cbor2 and xxhash"),
    ),
)


def test_the_table_and_the_example_come_from_the_report() -> None:
    page = parse(render_hash_cost(REPORT, "on this server"))
    rows = {row.attrs["data-name"]: row for row in page.with_attr("data-name")}
    assert rows["sha256"].attrs["data-us"] == "1.5000" and "1.50 µs" in rows["sha256"].text
    assert (
        "needs the xxhash package" in rows["xxhash"].text and "data-us" not in rows["xxhash"].attrs
    )
    assert "needs the cbor2 and xxhash packages" in rows["xxhash_cbor"].text
    example = " ".join(page.find_all(data_testid="hash-cost-example")[0].text.split())
    blocks = EXAMPLE_PROMPT_TOKENS // 16
    assert f"{blocks} full blocks" in example and f"about {blocks * 1.5 / 1000:.2f} ms" in example
    assert "measured on this server" in " ".join(page.text.split())
