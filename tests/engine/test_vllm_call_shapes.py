"""The engine takes the calls written for vLLM 0.33.0's own classes, with their defaults.

A harness (or a reader) that drives vLLM's pool drives this one the same way:
the same positional order, events off unless asked for, and BlockStored's extra
keys published untagged, as vLLM's ``to_event_extra_keys`` publishes them. The
scheduler's budgets default to vLLM's SchedulerConfig.
"""

from __future__ import annotations

import inspect

import pytest

from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_utils import get_request_block_hasher, sha256
from engine.vllm.kv_events import BlockStored
from engine.vllm.request import Request
from engine.vllm.scheduler import Scheduler

BS = 4


def test_the_constructor_has_vllms_parameters_in_vllms_order() -> None:
    parameters = list(inspect.signature(BlockPool.__init__).parameters)
    assert parameters[1:8] == [
        "num_gpu_blocks",
        "enable_caching",
        "hash_block_size",
        "enable_kv_cache_events",
        "metrics_collector",
        "num_hash_lookahead_tokens",
        "medium",
    ]


def test_a_positional_call_as_for_vllm_leaves_events_off() -> None:
    pool = BlockPool(
        10, True, BS
    )  # vLLM: BlockPool(num_gpu_blocks, enable_caching, hash_block_size)
    assert pool.hash_block_size == BS
    request = Request("A", range(1, 9), block_hasher=get_request_block_hasher(BS, sha256))
    blocks = pool.get_new_blocks(2)
    pool.cache_full_blocks(request, blocks, 0, 2, BS, 0)
    assert pool.take_events() == []
    assert len(pool.cached_block_hash_to_block) == 2


def test_what_is_not_modelled_is_refused_not_ignored() -> None:
    with pytest.raises(AssertionError, match="not modelled"):
        BlockPool(10, True, BS, metrics_collector=object())  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="not modelled"):
        BlockPool(10, True, BS, num_hash_lookahead_tokens=2)


@pytest.mark.parametrize(
    ("salt", "lora", "expected"),
    [
        (None, None, (None, None)),
        ("alice", None, (("alice",), None)),
        (None, "sql", (("sql",), ("sql",))),
        ("alice", "sql", (("sql", "alice"), ("sql",))),
    ],
)
def test_block_stored_publishes_the_extra_keys_untagged(
    salt: str | None, lora: str | None, expected: tuple[object, ...]
) -> None:
    pool = BlockPool(10, True, BS, enable_kv_cache_events=True, medium="GPU")
    request = Request(
        "A",
        range(1, 9),
        block_hasher=get_request_block_hasher(BS, sha256),
        cache_salt=salt,
        lora_name=lora,
        lora_int_id=1 if lora else None,
        lora_path="/adapters/sql" if lora else None,
    )
    pool.cache_full_blocks(request, pool.get_new_blocks(2), 0, 2, BS, 0)
    [event] = pool.take_events()
    assert isinstance(event, BlockStored)
    assert event.extra_keys == expected
    assert event.medium == "GPU"


def test_the_schedulers_budgets_default_to_vllms_scheduler_config() -> None:
    scheduler = Scheduler(num_gpu_blocks=10, block_size=BS)
    # SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS and DEFAULT_MAX_NUM_SEQS in 0.33.0
    assert scheduler.max_num_scheduled_tokens == 2048
    assert scheduler.max_num_running_reqs == 128
