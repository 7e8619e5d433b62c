"""Predict, then see: the questions a step asks about the next one, answered by the timeline.

A question at step s is about what step s + 1 will show, and its answer is read
off step s + 1's snapshot or result, never written by hand. Which steps ask is a
rule on the timeline, so every scenario and mode gets them where its lesson is:

- a prefix-cache reset through the Python API: will it succeed (its result), and
  what happens to the blocks of the running request holding the most blocks;
- a request admitted for the first time: how many prompt tokens it reuses from the
  cache (its num_cached_tokens), with the answers a learner would give without the
  lesson among the options (the whole prompt, every token whose hash is in the map,
  the tokens it shares with an earlier request, to the token and in whole blocks,
  what an earlier request reused of them, an earlier prompt it contains);
- a preempted request resumed: how many of its tokens its own cached blocks give
  back (vLLM counts them apart, in preempted_hits / preempted_queries, and keeps
  the request's num_cached_tokens from its first admission), with the answer a
  learner would give without the lesson: all of its full blocks, as if none had been
  evicted since;
- an allocation from free_block_queue while a cached block is free: which block
  is handed out (the head, cached or not);
- a request with an image whose token ids an earlier request had too: how much it
  reuses, the naive "the text is the same, so everything hits" among the options (it
  replaces that request's plain hit_tokens question).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, cast

from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.narration import RequestFacts
from engine.lab.play.vllm.snapshot import RequestRecord, Snapshot
from engine.lab.play.vllm.timeline import Step, Timeline
from engine.lab.shared.content import load_toml, one_line

RESET_CALL = "reset_prefix_cache("
# Each kind's words, from content/questions.toml.
WORDS: dict[str, dict[str, Any]] = load_toml("questions.toml")
RESET_OPTIONS = tuple(WORDS["reset_result"]["options"])
BLOCK_FATES = tuple(WORDS["block_fate"]["options"])
MAX_BLOCK_OPTIONS = 4


@dataclass(frozen=True)
class Question:
    kind: str  # reset_result, block_fate, hit_tokens, resume_hit, next_block, image_hit
    prompt: str
    options: tuple[str, ...]
    answer: int  # index into options
    explain: str  # shown with the answer: what step s + 1 shows


def ask(
    kind: str, options: tuple[str, ...], answer: int, explain: str = "explain", /, **data: object
) -> Question:
    """A question of ``kind`` in its words, filled from the step's ``data`` (``explain``:
    which of the kind's explanations)."""
    words = WORDS[kind]
    prompt = one_line(words["prompt"]).format(**data)
    return Question(kind, prompt, options, answer, one_line(words[explain]).format(**data))


def _reset_result(step: Step) -> Question | None:
    if not step.label.startswith(RESET_CALL) or step.result is None:
        return None
    answer = {"True": 0, "False": 1}.get(step.result, 2)
    how = "explain" if answer < 2 else "raised"
    return ask("reset_result", RESET_OPTIONS, answer, how, label=step.label, result=step.result)


def _holder(snapshot: Snapshot) -> RequestRecord | None:
    """The running request holding the most blocks (the first such in arrival order)."""
    running = [r for r in snapshot.requests if r.request_id in snapshot.running and r.block_ids]
    return max(running, key=lambda r: len(r.block_ids), default=None)


def _block_fate(before: Snapshot, step: Step) -> Question | None:
    if not step.label.startswith(RESET_CALL):
        return None
    holder = _holder(before)
    if holder is None:
        return None
    after = step.snapshot
    ids = holder.block_ids
    held = {after.block(b).ref_cnt > 0 for b in ids}
    hashed = [b for b in ids if before.block(b).block_hash is not None]
    kept = {after.block(b).block_hash == before.block(b).block_hash for b in hashed}
    if len(held) != 1 or len(kept) != 1 or not hashed:
        return None  # not one fate for all of them: no clean question
    answer = (0 if kept == {True} else 1) if held == {True} else (2 if kept == {True} else 3)
    names = ", ".join(f"#{b}" for b in ids)
    r = holder.request_id
    fates = tuple(f.format(r=r) for f in BLOCK_FATES)
    return ask("block_fate", fates, answer, r=r, names=names, fate=fates[answer])


def token_options(
    hit: int, total: int, others: tuple[int, ...], label: Callable[[int], str] = "{} tokens".format
) -> tuple[tuple[str, ...], int]:
    """The answer, the whole prompt, then ``others`` (the answers a learner would give
    without the lesson first, then near ones), up to MAX_BLOCK_OPTIONS in all; sorted
    and labelled, with the index of the answer."""
    chosen: list[int] = []
    for n in (hit, total, *others):
        if 0 <= n <= total and n not in chosen and len(chosen) < MAX_BLOCK_OPTIONS:
            chosen.append(n)
    options = sorted(chosen)
    return tuple(map(label, options)), options.index(hit)


def _admitted(before: Snapshot, step: Step) -> Iterator[RequestRecord]:
    """The requests the step admitted (not those admitted before, preempted since)."""
    earlier = {r.request_id: r for r in before.requests}
    for request in step.snapshot.requests:
        previous = earlier.get(request.request_id)
        if request.num_cached_tokens >= 0 and not (previous and previous.num_cached_tokens >= 0):
            yield request


def _chain_tokens(request: RequestRecord) -> tuple[int, ...]:
    """The request's tokens in its full blocks, as its chain holds them."""
    return tuple(t for link in request.chain for t in link.token_ids)


def _common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    shorter = min(len(a), len(b))
    return next((i for i in range(shorter) if a[i] != b[i]), shorter)


def _common_chain_prefix(a: RequestRecord, b: RequestRecord) -> int:
    """_common_prefix of the two requests' _chain_tokens, a whole block at a time: a
    playground of 200 requests compares each admitted one with every earlier one."""
    n = 0
    for x, y in zip(a.chain, b.chain, strict=False):
        if x.token_ids == y.token_ids:
            n += len(x.token_ids)
        elif len(x.token_ids) == len(y.token_ids):  # (full blocks: they part in this one)
            return n + _common_prefix(x.token_ids, y.token_ids)
        else:
            return n + _common_prefix(_chain_tokens(a)[n:], _chain_tokens(b)[n:])
    return n


def _tempting(before: Snapshot, request: RequestRecord, block_size: int) -> tuple[int, ...]:
    """What a learner would answer without the lesson: every token whose block hash is
    already in the map (forgetting the num_tokens - 1 cap and a skipped lookup); the
    tokens it shares with an earlier request, to the token (forgetting that only whole
    blocks hit) and in the whole blocks a lookup would take (forgetting a salt or a
    reset that changed the hashes: the other modes' answer); what an earlier request
    reused of those shared tokens (the other salt's hit); and the length of the latest
    earlier prompt (forgetting that hashes chain from the start)."""
    in_map = {e.hash_label for e in before.hash_map}
    found = 0
    for link in request.chain:
        if link.hash_label not in in_map:
            break
        found += 1
    earlier = [r for r in before.requests if r.request_id != request.request_id]
    common = [_common_chain_prefix(request, other) for other in earlier]
    shared = max(common, default=0)
    reused = max(
        (min(max(o.num_cached_tokens, 0), c) for o, c in zip(earlier, common, strict=True)),
        default=0,
    )
    # the hit those shared tokens would give if their hashes matched (the cap kept)
    whole = min(shared, request.num_prompt_tokens - 1) // block_size * block_size
    latest = [r.num_prompt_tokens for r in earlier[-1:]]
    return (found * block_size, reused, shared, whole, *latest)


def _hit_tokens(before: Snapshot, step: Step, block_size: int) -> list[Question]:
    asked = []
    for request in _admitted(before, step):
        if not before.hash_map and not request.skip_reading_prefix_cache:
            continue  # nothing cached yet: nothing to predict
        hit, total = request.num_cached_tokens, request.num_prompt_tokens
        tempting = _tempting(before, request, block_size)
        options, answer = token_options(
            hit, total, (*tempting, 0, hit - block_size, hit + block_size)
        )
        asked.append(
            ask("hit_tokens", options, answer, request=request.request_id, total=total, hit=hit)
        )
    return asked


def _resume_hit(before: Snapshot, step: Step, block_size: int) -> Question | None:
    """A preempted request resumes: its lookup is counted in the preempted stats only."""
    after = step.snapshot
    queried = after.stats.preempted_queries - before.stats.preempted_queries
    resumed = [
        r
        for r in before.requests
        if r.status == "PREEMPTED" and after.request(r.request_id).status != "PREEMPTED"
    ]
    if queried <= 0 or len(resumed) != 1:
        return None  # no resumption, or several sharing the counters
    request = resumed[0]
    hit = after.stats.preempted_hits - before.stats.preempted_hits
    # tempting: every full block it had cached, as if none had been evicted since
    own = min(len(request.chain) * block_size, queried - 1) // block_size * block_size
    options, answer = token_options(hit, queried, (own, 0, hit - block_size, hit + block_size))
    data = {"request": request.request_id, "queried": queried, "hit": hit}
    return ask("resume_hit", options, answer, **data)


def _next_block(before: Snapshot, step: Step) -> Question | None:
    queue = before.free_queue
    if not queue:
        return None
    head = before.block(queue[0])
    now = step.snapshot.block(head.block_id)
    if now.ref_cnt == 0 or (head.block_hash is not None and now.block_hash == head.block_hash):
        return None  # the head was not handed out (a hit keeps the hash)
    # (from the tail, where freed cached blocks go: found at once if there is one)
    if not any(before.block(b).block_hash for b in reversed(queue)):
        return None  # no cached block to tempt: every free block is alike
    shown = sorted({*queue[:3], queue[-1]})
    options, answer = tuple(f"#{b}" for b in shown), shown.index(head.block_id)
    how = "cached" if head.block_hash else "explain"
    return ask("next_block", options, answer, how, block=head.block_id)


def _same_text(a: RequestRecord, b: RequestRecord) -> bool:
    """The same prompt length and token ids in every full block (what the chain shows)."""
    return (
        a.num_prompt_tokens == b.num_prompt_tokens
        and len(a.chain) == len(b.chain)
        and all(x.token_ids == y.token_ids for x, y in zip(a.chain, b.chain, strict=True))
    )


def _image_hit(before: Snapshot, step: Step, block_size: int) -> list[Question]:
    """An admitted request with an image, whose token ids an earlier one had: how much
    does it reuse? The naive answer (all of it) is among the options."""
    asked = []
    for request in _admitted(before, step):
        facts = RequestFacts(request, block_size)
        if facts.image_start < 0:
            continue  # no image (looked at first: the twin is a walk of every request)
        twin = next(
            (
                r
                for r in before.requests
                if r.request_id != request.request_id and _same_text(r, request)
            ),
            None,
        )
        if twin is None:
            continue
        total, hit = request.num_prompt_tokens, request.num_cached_tokens
        candidates = {
            "whole": total,
            "before_image": facts.blocks_before_image * block_size,
            "short_of_last": (total - 1) // block_size * block_size,
            "none": 0,
            "answer": hit,
        }
        counts: dict[int, str] = {}
        for why, count in candidates.items():
            counts.setdefault(count, WORDS["image_hit"][why])
        options = tuple(f"{n} tokens: {why}" for n, why in sorted(counts.items()))
        data = {"request": request.request_id, "twin": twin.request_id, "keys": facts.image_keys}
        asked.append(ask("image_hit", options, sorted(counts).index(hit), hit=hit, **data))
    return asked


# A batch of many admissions asks about a few of them, those that hit first.
MAX_HIT_QUESTIONS = 3


def few_hit_questions(asked: list[Question]) -> list[Question]:
    """At most MAX_HIT_QUESTIONS of a step's hit questions, in their order: those whose
    answer is not 0 tokens first (predicting 0 for a long run of cold requests teaches
    nothing new)."""
    if len(asked) <= MAX_HIT_QUESTIONS:
        return asked
    hitting = [q for q in asked if q.options[q.answer] != "0 tokens"]
    chosen = (hitting + [q for q in asked if q not in hitting])[:MAX_HIT_QUESTIONS]
    return [q for q in asked if q in chosen]


def questions_at(timeline: Timeline | SGLangTimeline, step: int) -> tuple[Question, ...]:
    """The questions step `step` asks about step `step + 1` (none at the last step). An
    SGLang timeline asks its own, about the radix tree (engine/lab/play/sglang/questions.py)."""
    if timeline.engine == SGLangTimeline.engine:
        # imported here: that module builds on this one's Question
        from engine.lab.play.sglang.questions import sglang_questions_at

        return sglang_questions_at(cast(SGLangTimeline, timeline), step)
    if step + 1 >= len(timeline.steps):
        return ()
    timeline = cast(Timeline, timeline)
    before, after = timeline.steps[step].snapshot, timeline.steps[step + 1]
    images = _image_hit(before, after, timeline.block_size)
    # A request asked about with its image is not asked again without it.
    asked_ids = tuple(f"{q.prompt.split(' has the same')[0]} is admitted" for q in images)
    found = [
        _reset_result(after),
        _block_fate(before, after),
        *images,
        *few_hit_questions(
            [
                q
                for q in _hit_tokens(before, after, timeline.block_size)
                if not q.prompt.startswith(asked_ids or ("\0",))
            ]
        ),
        _resume_hit(before, after, timeline.block_size),
        _next_block(before, after),
    ]
    return tuple(q for q in found if q is not None)


def all_questions(timeline: Timeline | SGLangTimeline) -> list[list[dict[str, object]]]:
    """Per step, its questions as JSON (what the browser holds)."""
    return [
        [asdict(q) for q in questions_at(timeline, step)] for step in range(len(timeline.steps))
    ]
