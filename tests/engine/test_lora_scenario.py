"""lora-adapter: what its narration says is what each step shows. An adapter's key is
among the extra keys of every block (vLLM 0.33.0's ``_gen_lora_extra_hash_keys``), a
salt among the first block's only; the same prompt on two adapters shares no block."""

from __future__ import annotations

import ast
from functools import cache

from engine.lab.play.scenario import load_scenario
from engine.lab.play.sglang.timeline import SGLangTimeline, build_sglang_timeline
from engine.lab.play.vllm.snapshot import RequestRecord
from engine.lab.play.vllm.timeline import Timeline, build_timeline


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
    assert "every one of its 5 full blocks" in " ".join(vllm().narration_text(arrived).split())
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
    assert "16 hit, all of them sql-2's" in " ".join(
        vllm().narration_text(vllm().steps[-1]).split()
    )


@cache
def sglang() -> SGLangTimeline:
    return build_sglang_timeline(load_scenario("lora-adapter"), "fcfs", trace=False)


def test_on_sglang_each_adapter_is_a_namespace_of_its_own() -> None:
    """SGLang appends the adapter's id to the extra_key (schedule_batch.py:1165-1170):
    the requests of one adapter share a subtree, no other request enters it."""
    last = sglang().steps[-1].snapshot
    keys = {r.request_id: r.extra_key for r in last.requests}
    sql_id = keys["sql-1"]
    assert sql_id is not None and len(sql_id) == 32 and keys["sql-2"] == sql_id
    assert keys["chat-1"] not in (None, sql_id) and keys["base"] is None
    assert keys["salted"] == "alice" + sql_id  # the salt in front, as the narration says
    hits = {r.request_id: r.hit_tokens for r in last.requests}
    assert hits == {"sql-1": 0, "sql-2": 16, "chat-1": 0, "salted": 0, "base": 0}
    # one subtree per namespace under the root: sql's (split), chat's, salted's, base's
    under_root = [n.extra_key for n in last.nodes if n.parent == 0]
    assert sorted(map(str, under_root)) == sorted(map(str, set(keys.values())))
    text = " ".join(sglang().narration_text(sglang().steps[-1]).split())
    assert last.counters.hits == hits["sql-2"] and "16 hit, all of them sql-2's" in text
