"""Every narration, in every scenario, mode and step, states only what that step's data shows.

Block ids and counts are placeholders filled from the step (engine/lab/play/vllm/narration.py);
a template that writes an id or a count by hand is refused, and so is a step
whose pool took and gave back a block without the text naming it.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.vllm.facts import StepFacts
from engine.lab.play.vllm.narration import FACT_LISTS, BlockIds, fill_narration, narration_context
from engine.lab.play.vllm.timeline import Step, Timeline, build_timeline

CASES = [
    (name, mode, index)
    for name in scenario_names()
    for mode in load_scenario(name).modes
    for index in range(len(load_scenario(name).script) + 1)
]

# Digits a template may write itself: names and constants, not state.
ALLOWED_DIGITS = re.compile(
    r"num_tokens\s*-\s*1|\bk - 1\b"  # the cap on a cache hit, a formula
    r"|#0\b"  # the null block is always #0
    r"|SHA-256|sha256"
    r"|\b[A-Z][A-Z_]+=\d+\b"  # an environment setting, VLLM_SERVER_DEV_MODE=1
    r"|\bHTTP [1-5]\d\d\b|\b[2-5]\d\d (?=OK|Bad|Internal|Not)"  # status codes
    r"|\bvLLM \d+\.\d+\.\d+|\b0\.33\.0\b"
    r"|\bPR \d+|\bissue \d+"
    r"|\b\d+-bit\b|Llama-3-8B|\bH100\b|\bbf16\b"
    r"|\{[^{}]*\}"  # placeholders (and JSON bodies) are checked elsewhere
)
BLOCK_IDS = re.compile(r"#(\d+)(?: to #(\d+))?")  # "#4" or a run "#4 to #9" / "#9 to #4"


def named_blocks(text: str) -> set[int]:
    named: set[int] = set()
    for first, last in BLOCK_IDS.findall(text):
        lo, hi = sorted((int(first), int(last or first)))
        named.update(range(lo, hi + 1))
    return named


@cache
def timeline(name: str, mode: str) -> Timeline:
    return build_timeline(load_scenario(name), mode, trace=False)


def step_of(name: str, mode: str, index: int) -> tuple[Timeline, Step]:
    t = timeline(name, mode)
    return t, t.steps[index]


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_template_writes_no_block_id_or_count_by_hand(name: str, mode: str, index: int) -> None:
    t, step = step_of(name, mode, index)
    template = " ".join(t.narration_template(step).split())
    assert not re.search(r"#[1-9]|\b[Bb]locks? \d", template), (
        f"{name} [{mode}] step {index}: write block ids as placeholders, e.g. {{allocated}}"
    )
    request_ids = [r.request_id for r in step.snapshot.requests]
    names = re.compile("|".join(rf"\b{re.escape(r)}\b" for r in request_ids) or "$^")
    stray = re.findall(r"\d[\d,]*", names.sub("", ALLOWED_DIGITS.sub("", template)))
    assert not stray, (
        f"{name} [{mode}] step {index}: numbers {stray} are written by hand; take them "
        f"from the step (see engine/lab/play/vllm/narration.py for the placeholders)"
    )


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_every_placeholder_is_filled(name: str, mode: str, index: int) -> None:
    t, step = step_of(name, mode, index)
    text = t.narration_text(step)
    assert not re.search(r"\{[A-Za-z_][\w.\-\[\]:,]*\}", text), (
        f"{name} [{mode}] step {index}: unfilled placeholder in {text!r}"
    )


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_named_blocks_are_in_the_step(name: str, mode: str, index: int) -> None:
    t, step = step_of(name, mode, index)
    snapshot = step.snapshot
    seen = {b for _, b in step.facts.order} | set(snapshot.free_queue) | {0}
    seen |= {b for r in snapshot.requests for b in r.block_ids}
    seen |= {b for entry in snapshot.hash_map for b in entry.block_ids}
    if snapshot.offload is not None:  # CPU ids, written "CPU #1"
        seen |= {b.block_id for b in snapshot.offload.cpu_blocks}
    named = named_blocks(t.narration_text(step))
    assert named <= seen, f"{name} [{mode}] step {index}: {named - seen} not in the step"


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_a_block_taken_and_freed_within_the_step_is_named(name: str, mode: str, index: int) -> None:
    t, step = step_of(name, mode, index)
    text = t.narration_text(step)
    named = named_blocks(text)
    missing = set(step.facts.taken_and_freed) - named
    assert not missing, (
        f"{name} [{mode}] step {index}: the pool took and freed {sorted(missing)} within "
        f"the step, invisible in the snapshot; the narration must say so ({{taken_and_freed}})"
    )


# -- the facts themselves -----------------------------------------------------------------


def test_reset_step_8_records_the_block_taken_and_freed_and_the_blocks_b_keeps() -> None:
    _, step = step_of("reset", "default", 8)
    facts = step.facts
    c_blocks = (2, 3, 7)  # C's blocks at step 7: two hits on B's blocks, then its own
    assert facts.allocated == facts.taken_and_freed == (8,)
    assert facts.freed_to_head == (8,) and facts.freed_to_tail == (7,)
    assert set(facts.released) == {2, 3} and set(facts.released) < set(c_blocks)
    assert {2, 3} <= set(step.snapshot.request("B").block_ids)


def test_placeholders_fill_ids_counts_and_specs() -> None:
    _, step = step_of("reset", "default", 8)
    text = fill_narration(
        "{taken_and_freed} back; {released} stay with B ({B.blocks}); "
        "{stats.hits:,} hit tokens; {free_queue[0]} is the head; {C.num_tokens} tokens; "
        'a body {"success": true} stays',
        step.facts,
        step.snapshot,
        4,
    )
    assert text == (
        "#8 back; #3 and #2 stay with B (#2 to #6); 8 hit tokens; "
        '#8 is the head; 14 tokens; a body {"success": true} stays'
    )


def test_an_unknown_placeholder_stays_visible() -> None:
    _, step = step_of("reset", "default", 1)
    assert fill_narration("{nobody.blocks} {B.nothing}", StepFacts(), step.snapshot, 4) == (
        "{nobody.blocks} {B.nothing}"
    )


def test_block_ids_read_as_a_list() -> None:
    assert str(BlockIds([])) == "no block"
    assert str(BlockIds([4])) == "#4"
    assert str(BlockIds([2, 3])) == "#2 and #3"
    assert str(BlockIds([2, 3, 4, 9])) == "#2 to #4 and #9"
    assert str(BlockIds([9, 8, 6, 5, 4])) == "#9, #8 and #6 to #4"
    assert named_blocks("#9, #8 and #6 to #4") == {9, 8, 6, 5, 4}
    snapshot = step_of("reset", "keep", 2)[1].snapshot
    context = narration_context(StepFacts(allocated=(5,)), snapshot, 4)
    assert str(context["allocated"]) == "#5" and context["allocated"].count == 1


# -- the lessons' own numbers -------------------------------------------------------------


def test_the_seed_agent_prompt_hits_what_the_seed_says() -> None:
    t = timeline("agent-prompt", "default")
    r1 = t.steps[1].snapshot.request("R1")
    assert (r1.num_prompt_tokens, len(r1.chain), r1.num_prompt_tokens % t.block_size) == (
        2200,
        137,
        8,
    )
    assert t.steps[4].snapshot.request("R2").num_cached_tokens == 2000
    assert t.steps[6].snapshot.request("R3").num_cached_tokens == 2192
    text = t.narration_text(t.steps[4])
    assert "445 TFLOP/s" in text and "20 requests/s" in text and "989.4" in text
    flat = " ".join(text.split())
    assert "663.36" in flat and "about 13.4 requests/s" in flat  # exact, and the crossover


def test_an_unaligned_shared_prefix_reuses_whole_blocks_only() -> None:
    t = timeline("unaligned-prefix", "default")
    shared = 10  # the prompts' common prefix, from the scenario
    assert t.steps[4].snapshot.request("U2").num_cached_tokens == (
        t.block_size * (shared // t.block_size)
    )


def test_the_seed_load_saturates_the_gpu() -> None:
    from engine.lab.shared.prefill_cost import H100_ACHIEVED_FLOPS, Saturation

    assert round(H100_ACHIEVED_FLOPS / 1e12) == 445
    assert Saturation(20, 2000).saturated
    assert not Saturation(10, 2000).saturated


# -- counts written as words -------------------------------------------------------------

NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "both": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
# "three blocks", "two references each", "both references", "three full blocks"
COUNTED = re.compile(
    r"\b(?P<word>" + "|".join(NUMBER_WORDS) + r")\s+(?:(?:more|full|cached|held|of its)\s+)?"
    r"(?P<noun>blocks?|references?|refs)\b",
    re.IGNORECASE,
)


def step_block_counts(t: Timeline, step: Step) -> set[int]:
    """Every count of blocks the step shows: what the pool did, and each request's blocks."""
    context = narration_context(step.facts, step.snapshot, t.block_size)
    counts = {len(getattr(step.facts, name)) for name in FACT_LISTS}
    counts |= {context[k] for k in ("num_free", "num_held", "map_size", "usable")}
    for r in step.snapshot.requests:
        facts = context[r.request_id]
        counts |= {
            facts.num_blocks,
            facts.hit_blocks,
            facts.full_blocks,
            facts.prompt_full_blocks,
            facts.num_blocks - facts.hit_blocks,  # the blocks it had to allocate
        }
    counts |= {len(entry.block_ids) for entry in step.snapshot.hash_map}
    chains = [[link.hash_label for link in r.chain] for r in step.snapshot.requests]
    for a in chains:  # "its first two blocks match U1's"
        for b in chains:
            common = [x == y for x, y in zip(a, b, strict=False)]
            counts.add(common.index(False) if False in common else len(common))
    counts.add(1)  # "one block" of a step's decode, "one more block"
    return counts


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_counts_written_as_words_match_the_step(name: str, mode: str, index: int) -> None:
    t, step = step_of(name, mode, index)
    text = t.narration_text(step)
    blocks = step_block_counts(t, step)
    ref_cnts = {b.ref_cnt for b in step.snapshot.blocks}
    previous = t.steps[index - 1].snapshot.blocks if index else ()
    ref_cnts |= {b.ref_cnt for b in previous}  # "had two references"
    for match in COUNTED.finditer(text):
        n, noun = NUMBER_WORDS[match["word"].lower()], match["noun"].lower()
        if noun.startswith("block"):
            assert n in blocks, (
                f"{name} [{mode}] step {index}: {match[0]!r} but the step shows block "
                f"counts {sorted(blocks)}; template it (e.g. {{cached.count}})"
            )
        else:
            assert n in ref_cnts, (
                f"{name} [{mode}] step {index}: {match[0]!r} but ref_cnt is "
                f"{sorted(ref_cnts)} in the step"
            )


def test_a_wrong_count_word_is_caught() -> None:
    t, step = step_of("reset", "default", 8)
    assert 11 not in step_block_counts(t, step)
    assert COUNTED.search("all eleven blocks are freed")["word"] == "eleven"  # type: ignore[index]
    assert COUNTED.search("Both references are dropped")["noun"] == "references"  # type: ignore[index]


@pytest.mark.parametrize(("name", "mode", "index"), [c for c in CASES if c[2]])
def test_a_successful_reset_records_every_hash_it_cleared(name: str, mode: str, index: int) -> None:
    """In every mode: the released reset (default, preempt) as well as keep mode's."""
    t, step = step_of(name, mode, index)
    before = t.steps[index - 1].snapshot
    if step.snapshot.stats.resets == before.stats.resets:
        assert not step.facts.cleared
        return
    assert set(step.facts.cleared) == {b for e in before.hash_map for b in e.block_ids}


def test_the_preempting_reset_says_which_hashes_it_cleared() -> None:
    t, step = step_of("reset", "preempt", 1)
    assert step.facts.cleared == (1, 2, 3, 4)
    assert "#1 to #4 lose their hashes" in " ".join(t.narration_text(step).split())


def test_shared_prefix_says_whose_blocks_were_allocated() -> None:
    t, step = step_of("shared-prefix", "default", 4)
    s1, s2 = step.snapshot.request("S1"), step.snapshot.request("S2")
    assert set(step.facts.allocated) <= set(s2.block_ids) - set(s1.block_ids)
    text = " ".join(t.narration_text(step).split())
    assert f"into {BlockIds(step.facts.allocated)}:" in text
    assert f"partial last block, #{s1.block_ids[-1]}" in text


# -- what the pool did is said at its step ------------------------------------------------

SAYS = {
    "evicted": re.compile(r"evict|BlockRemoved|los(?:e|es|t) (?:its|their) (?:old )?hash", re.I),
    "cached": re.compile(r"\b(?:re-)?cach(?:e|es|ed|ing)\b|BlockStored", re.I),
    "allocated": re.compile(r"."),  # naming the blocks is enough: "takes #5", "into #5"
}


@pytest.mark.parametrize(("name", "mode", "index"), [c for c in CASES if c[2]])
def test_every_eviction_new_cached_block_and_handed_out_block_is_named(
    name: str, mode: str, index: int
) -> None:
    """A learner reads the step's story from its text: a block that lost its hash, one
    cached anew or one handed out from the free queue is named at that very step (a
    long run may be counted instead, with ``{cached.count}`` and the like)."""
    t, step = step_of(name, mode, index)
    template = t.narration_template(step)
    text = " ".join(t.narration_text(step).split())
    named = named_blocks(text)
    for kind, says in SAYS.items():
        ids = set(getattr(step.facts, kind))
        if not ids or f"{{{kind}.count}}" in template:
            continue
        assert ids <= named and says.search(text), (
            f"{name} [{mode}] step {index}: the pool {kind} {sorted(ids)}, and the text "
            f"does not say so: {text!r}"
        )


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_a_hash_is_not_written_as_a_block_id(name: str, mode: str, index: int) -> None:
    """``#6`` is a block; a sentence about a hash must not print a block id in its place."""
    t, step = step_of(name, mode, index)
    text = " ".join(t.narration_text(step).split())
    assert not re.search(r"\bhash(?:es)? \(#\d", text), f"{name} [{mode}] step {index}: {text}"


def test_first_chunk_mode_says_what_each_return_of_l_got_back() -> None:
    t = timeline("full-sequence-fit", "first-chunk")
    step = t.steps[-1]
    l_request, stats = step.snapshot.request("L"), step.snapshot.stats
    # the data: at each of its returns, L's first block (and only it) was a hit
    assert stats.preempted_hits == t.block_size * l_request.num_preemptions
    assert stats.preempted_hits < stats.preempted_queries
    text = " ".join(t.narration_text(step).split())
    assert "its first block was a hit" in text
    assert "the tokens it had computed before each preemption were computed again" not in text


def test_the_offload_log_line_that_overstates_is_called_out() -> None:
    """vLLM logs a finished store with the transfer's block count, even when the fixed
    completion registers none of them: the text must not leave the two disagreeing."""
    t = timeline("keep-offload-fixed", "keep")
    lines = [(s, x.message) for s in t.steps for x in s.snapshot.logs]
    step, line = next((s, m) for s, m in lines if "completed: cached" in m)
    assert step.snapshot.offload is not None and not step.snapshot.offload.cpu_hash_map
    logged = re.search(r"cached \d+ blocks to CPU", line)
    assert logged
    text = " ".join(t.narration_text(step).split())
    assert f'"{logged[0]}" overstates' in text


def test_blocks_taken_and_freed_are_listed_in_the_order_they_were_taken() -> None:
    """A list after "prefills into" reads as the order of taking, not of freeing."""
    t, step = step_of("agent-prompt", "default", 4)
    assert step.facts.taken_and_freed == step.facts.allocated  # R2 takes them, then finishes
    allocated = BlockIds(step.facts.allocated)
    assert str(allocated).startswith(f"#{min(step.facts.allocated)} to ")
    assert f"into {allocated} (taken and freed" in " ".join(t.narration_text(step).split())
