"""page-size: SGLang at page size 4 against vLLM at block size 4; what the narration
says is what each step shows (radix_cache.py's page-aligned keys and matches,
allocator/paged.py's freed pages put at the front)."""

from __future__ import annotations

from engine.lab.play.sglang.snapshot import SGLangRequestRecord
from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.timeline import Timeline
from tests.engine.scenario_steps import sglang_timeline, vllm_timeline
from tests.engine.scenario_steps import step_index as at


def vllm() -> Timeline:
    return vllm_timeline("page-size")


def sglang() -> SGLangTimeline:
    return sglang_timeline("page-size")


def sglang_request(key: str, rid: str) -> SGLangRequestRecord:
    step = sglang().steps[at(sglang(), key)]
    return next(r for r in step.snapshot.requests if r.request_id == rid)


def test_both_engines_reuse_the_same_whole_units() -> None:
    assert sglang().page_size == vllm().block_size == 4
    final = vllm().steps[-1].snapshot
    vllm_hits = [final.request(r).num_cached_tokens for r in ("U1", "U2", "U3")]
    sglang_hits = [sglang_request("third_done", r).hit_tokens for r in ("U1", "U2", "U3")]
    assert vllm_hits == sglang_hits == [0, 8, 12]  # not the 10 shared tokens, nor 14


def test_the_tree_holds_whole_pages_and_splits_at_a_page_boundary() -> None:
    for step in sglang().steps:
        assert all(n.num_tokens % 4 == 0 for n in step.snapshot.nodes)
    first = sglang().steps[at(sglang(), "first_done")]
    assert first.snapshot.tree_tokens == 12  # 15 prompt tokens: three whole pages
    second = sglang().steps[at(sglang(), "second_done")]
    (split,) = second.facts.splits
    assert split.tokens == 8 and split.tokens % 4 == 0


def pages(slots: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(slot // 4 for slot in slots))


def test_the_partial_page_goes_back_to_the_front_and_is_handed_out_first() -> None:
    first = sglang().steps[at(sglang(), "first_done")]
    (page,) = pages(first.facts.taken_and_freed)
    assert first.snapshot.free_pages[0] == page  # the front of the free list
    second = sglang().steps[at(sglang(), "second_done")]
    assert pages(second.facts.allocated)[0] == page  # "the page U1 gave back first"
    third = sglang().steps[at(sglang(), "third_done")]
    assert len(pages(third.facts.taken_and_freed)) == 1 and not third.facts.inserted
