"""lora-adapter: what its narration says is what each step shows. An adapter's key is
among the extra keys of every block (vLLM 0.33.0's ``_gen_lora_extra_hash_keys``), a
salt among the first block's only; the same prompt on two adapters shares no block."""

from __future__ import annotations

import ast
from functools import cache

from engine.lab.scenario import load_scenario
from engine.lab.snapshot import RequestRecord
from engine.lab.timeline import Timeline, build_timeline


@cache
def vllm() -> Timeline:
    return build_timeline(load_scenario("lora-adapter"), "default", trace=False)


def extra_keys(request: RequestRecord) -> list[list[tuple[str, ...]]]:
    """Each full block's extra keys, as the hash input had them."""
    return [
        ast.literal_eval(f"[{link.extra_keys}]") if link.extra_keys else []
        for link in request.chain
    ]


def step_of(key: str) -> int:
    return next(s.index for s in vllm().steps if s.narration_key == key)


def test_the_adapter_is_in_every_block_and_the_salt_in_the_first_only() -> None:
    arrived = vllm().steps[step_of("sql_first")]
    sql = extra_keys(arrived.snapshot.request("sql-1"))
    assert len(sql) == 5 and all(keys == [("lora", "sql", "/adapters/sql")] for keys in sql)
    assert "every one of its 5 full blocks" in vllm().narration_text(arrived)
    salted = extra_keys(vllm().steps[step_of("salted")].snapshot.request("salted"))
    assert salted[0] == [("lora", "sql", "/adapters/sql"), ("cache_salt", "alice")]
    assert all(keys == [("lora", "sql", "/adapters/sql")] for keys in salted[1:])
    base = vllm().steps[step_of("base")].snapshot.request("base")
    assert base.chain and extra_keys(base) == [[] for _ in base.chain]


def test_one_prompt_on_two_adapters_shares_no_block() -> None:
    snapshot = vllm().steps[-1].snapshot
    sql, chat = snapshot.request("sql-2"), snapshot.request("chat-1")
    salted, base = snapshot.request("salted"), snapshot.request("base")
    # the same tokens, four chains with no hash in common
    chains = [set(r.block_hash_labels) for r in (sql, chat, salted, base)]
    assert all(len(chain) == 5 for chain in chains)
    assert sum(len(chain) for chain in chains) == len(set().union(*chains))
    assert [r.num_cached_tokens for r in (sql, chat, salted, base)] == [16, 0, 0, 0]
    # the closing sentence: every hit was sql-2's
    assert snapshot.stats.hits == sql.num_cached_tokens
    assert "16 hit, all of them sql-2's" in vllm().narration_text(vllm().steps[-1])
