"""Prompt block hashes reused between lab runs: the same runs, without rehashing."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.lab.workload.prompt_hashes import PromptHashStore
from engine.lab.workload.vllm.runner import WorkloadRunner
from engine.lab.workload.workload import SALT_POLICIES, Workload
from engine.vllm.kv_cache_utils import get_request_block_hasher, sha256
from engine.vllm.request import Request

SMALL = Workload(
    requests=30, shared_tokens=64, unique_tokens=20, output_tokens=6, num_gpu_blocks=400
)


def played(workload: Workload, store: PromptHashStore | None) -> tuple[Any, list[list[bytes]]]:
    """A run's result and every request's block hashes at its end."""
    runner = WorkloadRunner(workload, prompt_hashes=store)
    runner.advance()
    return runner.result(), [list(r.block_hashes) for r in runner.requests]


def test_a_rerun_with_the_prompts_unchanged_reuses_their_hashes_and_plays_the_same() -> None:
    store = PromptHashStore()
    played(SMALL, store)
    kept = len(store)
    assert kept == SMALL.requests * ((SMALL.shared_tokens + SMALL.unique_tokens) // 16)
    for changed in (
        {"output_tokens": 40},  # blocks of generated tokens are hashed as they fill
        {"num_gpu_blocks": 60},  # evictions and preemptions
        {"arrival": 3, "requests": 50},  # 20 new prompts, hashed and kept
        {"reset_step": 4, "reset_mode": "keep"},
    ):
        workload = SMALL.replace(**changed)
        assert workload.prompt_key() == SMALL.prompt_key()
        assert played(workload, store) == played(workload, None)
    assert len(store) == 50 * ((SMALL.shared_tokens + SMALL.unique_tokens) // 16)


def test_a_changed_prompt_knob_is_a_new_key() -> None:
    store = PromptHashStore()
    for changed in (
        {},
        {"salt": "per-request"},
        {"prepend_token": True},
        {"block_size": 8},
        {"shared_tokens": 80},
    ):
        workload = SMALL.replace(**changed)
        assert played(workload, store) == played(workload, None)


KNOBS = {
    "shared_tokens": st.integers(0, 3),
    "unique_tokens": st.integers(1, 3),
    "block_size": st.sampled_from([1, 2]),
    "salt": st.sampled_from(SALT_POLICIES),
    "users": st.integers(1, 3),
    "prepend_token": st.booleans(),
    "output_tokens": st.integers(1, 3),
    "requests": st.integers(1, 6),
}


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_workloads_with_one_prompt_key_give_each_request_the_same_prompt_hashes(
    data: st.DataObject,
) -> None:
    """The key names every knob the prompt block hashes read: a second workload with a
    few knobs drawn again has the same prompt hashes whenever it has the same key."""
    first = {knob: data.draw(strategy) for knob, strategy in KNOBS.items()}
    redrawn = data.draw(st.sets(st.sampled_from(sorted(KNOBS)), min_size=1, max_size=2))
    second = {**first, **{knob: data.draw(KNOBS[knob]) for knob in redrawn}}
    a, b = Workload(**first), Workload(**second)
    if a.prompt_key() != b.prompt_key():
        return
    for index in range(min(a.requests, b.requests)):
        hashes = [
            Request(
                f"req-{index}",
                w.prompt(index),
                cache_salt=w.cache_salt(index),
                block_hasher=get_request_block_hasher(w.block_size, sha256),
            ).block_hashes
            for w in (a, b)
        ]
        assert hashes[0] == hashes[1]


def test_the_store_keeps_the_recent_keys_under_its_cap() -> None:
    per_run = SMALL.requests * 5
    store = PromptHashStore(max_hashes=2 * per_run)
    salted = [SMALL.replace(salt=s) for s in ("none", "fixed", "per-request")]
    for workload in salted:
        played(workload, store)
    assert len(store) == 2 * per_run  # the oldest key went
    # A run larger than the store plays right; it keeps what fits of its own.
    big = SMALL.replace(requests=90)
    assert played(big, store) == played(big, None)
    assert len(store) == 2 * per_run
    assert played(SMALL, store) == played(SMALL, None)  # its key was dropped: hashed again


PROMPTS = st.lists(
    st.tuples(
        st.integers(0, 12),  # tokens shared with the prompt before it
        st.lists(st.integers(1, 3), max_size=12),  # then tokens of its own
        st.sampled_from([None, "a", "b"]),  # cache_salt
        st.sampled_from([None, "lora-1"]),  # LoRA adapter
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(prompts=PROMPTS, block_size=st.sampled_from([1, 2, 4]))
def test_blocks_shared_with_an_earlier_prompt_hash_as_hashing_them_would(
    prompts: list[tuple[int, list[int], str | None, str | None]], block_size: int
) -> None:
    """Within a run, a prompt's blocks that repeat the previous prompt of the same salt
    and LoRA take that prompt's hashes; every hash equals vLLM's hasher's own."""
    plain = get_request_block_hasher(block_size, sha256)
    reusing = PromptHashStore().hasher(("key",), block_size, plain)
    previous: list[int] = []
    for index, (shared, own, salt, lora) in enumerate(prompts):
        prompt = previous[:shared] + own or [7]
        previous = prompt
        hashes = [
            Request(f"r{index}", prompt, cache_salt=salt, lora_name=lora, block_hasher=h)
            for h in (reusing, plain)
        ]
        assert hashes[0].block_hashes == hashes[1].block_hashes
        assert len(hashes[0].block_hashes) == len(prompt) // block_size


def test_a_shared_system_prompt_is_hashed_once_per_salt_in_a_run() -> None:
    hashed: list[object] = []

    def counted_sha256(obj: object) -> bytes:
        hashed.append(obj)
        return sha256(obj)

    workload = SMALL.replace(salt="per-user", users=3, requests=12)
    blocks_shared, blocks_own = workload.shared_tokens // 16, workload.unique_tokens // 16
    reusing = PromptHashStore().hasher(
        workload.prompt_key(), 16, get_request_block_hasher(16, counted_sha256)
    )
    for index in range(workload.requests):
        Request(
            f"req-{index}",
            workload.prompt(index),
            cache_salt=workload.cache_salt(index),
            block_hasher=reusing,
        )
    # Each user's first request hashes the system prompt; every request its own part.
    assert len(hashed) == 3 * blocks_shared + workload.requests * blocks_own
