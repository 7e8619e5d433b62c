"""Predict, then see, on SGLang: the questions a step of an SGLang timeline asks about
the next one, answered by that step's facts and snapshot (engine/lab/sglang_facts.py),
never written by hand. The counterpart of engine/lab/play/questions.py (vLLM's block pool):

- a request admitted: how many prompt tokens its walk down the radix tree matches (its
  prefix_len), with what a learner would answer without the lesson among the options
  (the whole prompt, forgetting that a match stops a token short; what an earlier
  request with as many prompt tokens got, forgetting its namespace);
- a walk that ends inside a node: which node is cut in two;
- an eviction: which node goes first (with lru, the evictable leaf used least recently;
  a node that is locked or has children is never evicted, however old);
- a flush_cache call: will it go through (only when the scheduler is fully idle).
"""

from __future__ import annotations

from engine.lab.play.questions import RESET_OPTIONS, Question, ask, few_hit_questions, token_options
from engine.lab.play.sglang.snapshot import ROOT_ID, NodeRecord, SGLangSnapshot
from engine.lab.play.sglang.timeline import SGLangStep, SGLangTimeline

MAX_NODE_OPTIONS = 4
SHOWN_TOKENS = 3  # a node's key, as an option shows it: its first tokens


def _tokens(n: int) -> str:
    return "1 token" if n == 1 else f"{n} tokens"


def _hit_tokens(before: SGLangSnapshot, step: SGLangStep) -> list[Question]:
    if not any(node.node_id != ROOT_ID for node in before.nodes):
        return []  # an empty tree: nothing to predict
    earlier = {r.request_id: r for r in before.requests}
    asked = []
    for rid in step.facts.admitted:
        previous = earlier.get(rid)
        if previous is not None and previous.hit_tokens >= 0:
            continue  # a retracted request coming back: admitted before
        request = next(r for r in step.snapshot.requests if r.request_id == rid)
        hit, total = request.hit_tokens, request.num_prompt_tokens
        # what the tree held of the whole prompt when it went in (the cap forgotten),
        # and the hits of earlier requests as long (their namespace forgotten)
        inserted = [w.matched_tokens for w in step.facts.walks_of(rid, "insert")]
        others = [
            r.hit_tokens
            for r in before.requests
            if r.num_prompt_tokens == total and r.hit_tokens > 0 and r.request_id != rid
        ]
        others.sort()
        options, answer = token_options(
            hit, total, (*inserted[:1], *others[-1:], 0, total // 2), _tokens
        )
        asked.append(ask("sglang_hit_tokens", options, answer, request=rid, total=total, hit=hit))
    return asked


def _node_option(node: NodeRecord) -> str:
    shown = ", ".join(str(t) for t in node.token_ids[:SHOWN_TOKENS])
    more = ", …" if node.num_tokens > SHOWN_TOKENS else ""
    return f"n{node.node_id}: [{shown}{more}] ({node.num_tokens} tokens)"


def _split_node(before: SGLangSnapshot, step: SGLangStep) -> Question | None:
    known = {node.node_id: node for node in before.nodes if node.node_id != ROOT_ID}
    split = next((s for s in step.facts.splits if s.child in known), None)
    if split is None:
        return None
    walk = next((w for w in step.facts.walks if w.split == split.node), None)
    if walk is None or walk.request_id is None:
        return None
    cut = known[split.child]
    # the cut node first, then its parent and the other nodes in the tree's order
    ranked = [cut.node_id, cut.parent, *known]
    shown = sorted({n for n in ranked if n in known}, key=ranked.index)[:MAX_NODE_OPTIONS]
    if len(shown) < 2:
        return None  # one node in the tree: nothing to choose
    options = sorted(shown)
    return ask(
        "sglang_split",
        tuple(_node_option(known[n]) for n in options),
        options.index(cut.node_id),
        request=walk.request_id,
        cut=cut.node_id,
        tokens=split.tokens,
        node=split.node,
    )


def _node_state(node: NodeRecord, parents: set[int]) -> str:
    state = [f"{node.num_tokens} tokens", f"last access {node.last_access_time}"]
    if node.lock_ref > 0:
        state.append("locked")
    if node.node_id in parents:
        state.append("has children")
    return f"n{node.node_id}: " + ", ".join(state)


def _evicted_first(
    before: SGLangSnapshot, step: SGLangStep, eviction_policy: str
) -> Question | None:
    if eviction_policy != "lru" or not step.facts.evictions:
        return None
    nodes = [node for node in before.nodes if node.node_id != ROOT_ID]
    leaves = [node for node in nodes if node.evictable_leaf]
    first = step.facts.evictions[0].node
    oldest = min(leaves, key=lambda node: node.last_access_time, default=None)
    if oldest is None or oldest.node_id != first:
        return None  # the step's own walks moved the order: no clean question
    # the leaves, and the node a learner would pick by age alone (locked or not a leaf)
    others = sorted(
        (node for node in nodes if not node.evictable_leaf),
        key=lambda node: node.last_access_time,
    )
    shown = sorted({first, *(n.node_id for n in [*others[:1], *leaves])})
    shown = [first, *[n for n in shown if n != first]][:MAX_NODE_OPTIONS]
    if len(shown) < 2:
        return None
    options = sorted(shown)
    by_id = {node.node_id: node for node in nodes}
    parents = {node.parent for node in nodes if node.parent is not None}
    return ask(
        "sglang_evicted",
        tuple(_node_state(by_id[n], parents) for n in options),
        options.index(first),
        node=first,
        access=by_id[first].last_access_time,
    )


def _flush_result(step: SGLangStep) -> Question | None:
    """A flush_cache call: will it go through (is the scheduler fully idle)?"""
    if step.label != "flush_cache()" or step.result not in ("True", "False"):
        return None
    answer = 0 if step.result == "True" else 1
    how = "explain" if answer == 0 else "busy"
    return ask("sglang_flush", RESET_OPTIONS[:2], answer, how, result=step.result)


def sglang_questions_at(timeline: SGLangTimeline, step: int) -> tuple[Question, ...]:
    """The questions step `step` of an SGLang timeline asks about step `step + 1`."""
    if step + 1 >= len(timeline.steps):
        return ()
    before, after = timeline.steps[step].snapshot, timeline.steps[step + 1]
    single = (
        _flush_result(after),
        _split_node(before, after),
        _evicted_first(before, after, timeline.eviction_policy),
    )
    hits = few_hit_questions(_hit_tokens(before, after))
    return (*hits, *(q for q in single if q is not None))
