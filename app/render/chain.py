"""A request's hash chain: each full block's hash = H(parent, tokens, extra keys).

Two requests side by side, aligned by block position, with equal hashes marked:
one token in front (prepend-token) or a salt (cache-salt) changes the first hash,
and by the chain every hash after it. The hashes come from the snapshot; the app
only compares their labels. Below them, on request, what hashing a block costs as
measured in the page's own Python (engine.lab.shared.hash_cost): a table per function,
and what that means for one prompt.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import TYPE_CHECKING

from app.render.glossary import said, term
from app.render.html import esc, panel, table
from engine.lab.play.vllm.snapshot import ChainLink, RequestRecord, Snapshot
from engine.lab.play.vllm.timeline import Timeline

if TYPE_CHECKING:  # (the decks import this module; the measuring is the chain view's)
    from engine.lab.shared.hash_cost import HashCostReport

# Chains longer than this show their first and last EDGE rows; the middle folds.
COLLAPSE_FROM = 12
EDGE = 4
SHOWN_TOKENS = 4  # tokens written out per block; the rest are in the tooltip
NONE = ""  # the picker's "no second request"
# The agent-prompt scenario's prompt: the lab's example of a long shared prefix.
EXAMPLE_PROMPT_TOKENS = 2_200


def default_pair(snapshot: Snapshot) -> tuple[str | None, str | None]:
    """The most recent request, and the one that arrived before it."""
    ids = [r.request_id for r in snapshot.requests]
    if not ids:
        return None, None
    return ids[-1], (ids[-2] if len(ids) > 1 else None)


# A pick of the learner's: (the request, the one to compare with); None follows the
# newest requests, NONE (for the second) is "(none)".
Picked = tuple[str | None, str | None]


def chain_pair(snapshot: Snapshot, picked: Picked = (None, None)) -> tuple[str | None, str | None]:
    """The pair shown at a step: the learner's picks where the step has them, else the
    newest requests (a second pick equal to the first, or absent, shows none)."""
    ids = {r.request_id for r in snapshot.requests}
    auto_a, auto_b = default_pair(snapshot)
    a = picked[0] if picked[0] in ids else auto_a
    if picked[1] is not None:
        b = picked[1] if picked[1] in ids and picked[1] != a else None
    else:
        b = auto_b if auto_b != a else None
    return a, b


def _picker(pick: str, label: str, ids: list[str], chosen: str) -> str:
    """A picker of ``ids``, ``chosen`` selected (NONE reads "(none)"), named by its
    aria-label: a label around a select would add the chosen option."""
    options = "".join(
        f'<option value="{esc(i)}"{" selected" if i == chosen else ""}>{esc(i) or "(none)"}'
        "</option>"
        for i in ids
    )
    return (
        f'<label class="picker"><span>{label}</span>'
        f'<select data-pick="{pick}" aria-label="{label}">{options}</select></label>'
    )


def render_chain_pickers(snapshot: Snapshot, a: str | None, b: str | None) -> str:
    """The two pickers over the chain, on the pair shown (the browser sends a pick to
    Python, which sends the chain's pages for it: app/components/chain_deck.js)."""
    ids = [r.request_id for r in snapshot.requests]
    if not ids:
        return ""
    primary = _picker("primary", "Request", ids, a or "")
    other = _picker("other", "Compare with", [NONE, *ids], b or NONE)
    return f'<div class="chain-pickers">{primary}{other}</div>'


def render_chain_picked(timeline: Timeline, step: int, picked: Picked = (None, None)) -> str:
    """The chain panel's page: the pickers on the pair shown, and its chains."""
    snapshot = timeline.steps[step].snapshot
    a, b = chain_pair(snapshot, picked)
    return render_chain_pickers(snapshot, a, b) + render_chain(timeline, step, a, b)


def _tokens(link: ChainLink) -> str:
    shown = " ".join(map(str, link.token_ids[:SHOWN_TOKENS]))
    more = " …" if len(link.token_ids) > SHOWN_TOKENS else ""
    return f"[{shown}{more}]"


def _formula(link: ChainLink | None, state: str) -> str:
    if link is None:
        return '<div class="f none">no full block here</div>'
    parent = esc(link.parent_label) if link.parent_label else term("none-hash")
    extra = esc(link.extra_keys) if link.extra_keys else "None"
    extra_class = "xk on" if link.extra_keys else "xk"
    full = " ".join(map(str, link.token_ids))
    return (
        f'<div class="f {state}" data-hash="{esc(link.hash_label)}">H(<span class="par">'
        f'{parent}</span>, <span class="tok" title="tokens {link.first_token}&ndash;'
        f'{link.first_token + len(link.token_ids) - 1}: {esc(full)}">{esc(_tokens(link))}</span>, '
        f'<span class="{extra_class}">{extra}</span>) = '
        f'<b class="h">{esc(link.hash_label)}</b></div>'
    )


def _row(index: int, a: ChainLink | None, b: ChainLink | None, compare: bool) -> str:
    same = a is not None and b is not None and a.hash_label == b.hash_label
    state = "same" if same else "diff"
    title, sign = ("equal hashes", "=") if same else ("different hashes", "≠")
    marker = f'<span class="cmp {state}" title="{title}">{sign}</span>' if compare else ""
    other = _formula(b, state) if compare else ""
    return (
        f'<div class="crow" data-index="{index}" data-same="{str(same).lower()}">'
        f'<span class="ix">{index}</span>{_formula(a, state if compare else "")}'
        f"{marker}{other}</div>"
    )


def _summary(a: RequestRecord, b: RequestRecord | None) -> str:
    hit = a.num_cached_tokens
    cached = said("chain.hit", tokens=hit) if hit >= 0 else said("chain.not_admitted")
    cached += f" · cache_salt {esc(a.cache_salt)!r}" if a.cache_salt else ""
    text = said("chain.summary", a=a, id=esc(a.request_id), blocks=len(a.chain), cached=cached)
    if b is not None:
        pairs = list(zip(a.chain, b.chain, strict=False))
        equal = sum(1 for x, y in pairs if x.hash_label == y.hash_label)
        first_diff = next(
            (i for i, (x, y) in enumerate(pairs) if x.hash_label != y.hash_label), None
        )
        where = "" if first_diff is None else f"; first difference at position {first_diff}"
        text += (
            f'<br><b>{esc(b.request_id)}</b>: equal hashes at <span data-testid="chain-equal">'
            f"{equal}</span> of {len(pairs)} aligned blocks{where}"
        )
    return f'<div class="chain-sum">{text}</div>'


def render_chain(
    timeline: Timeline, step: int, primary: str | None = None, other: str | None = None
) -> str:
    snapshot = timeline.steps[step].snapshot
    # (no ``other``: none shown, not the newest requests' second)
    primary, other = chain_pair(snapshot, (primary, NONE if other is None else other))
    title = f"{term('block-hash', 'Hash chain')} · H(parent, tokens, {term('extra-keys')})"
    if primary is None:
        empty = '<div data-testid="hash-chain" class="empty-note">no requests yet</div>'
        return panel("hash chain", title, empty)
    a = snapshot.request(primary)
    b = snapshot.request(other) if other else None
    pairs = zip_longest(a.chain, b.chain if b else ())
    rows = [_row(i, x, y, b is not None) for i, (x, y) in enumerate(pairs)]
    n = len(rows)
    if n > COLLAPSE_FROM:
        middle = rows[EDGE : n - EDGE]
        same = sum(1 for r in middle if 'data-same="true"' in r)
        note = f", {same} of them equal" if b else ""
        rows = [
            *rows[:EDGE],
            f'<details class="cmid"><summary>positions {EDGE}&ndash;{n - EDGE - 1} '
            f"({len(middle)} more{note})</summary>{''.join(middle)}</details>",
            *rows[n - EDGE :],
        ]
    columns = (
        '<div class="chead"><span title="position in the chain, from 0: not a block id">pos</span>'
        f"<span>{esc(a.request_id)}</span>"
        + (f"<span></span><span>{esc(b.request_id)}</span>" if b else "")
        + "</div>"
    )
    return panel(
        "hash chain",
        title,
        f'<div data-testid="hash-chain" data-request="{esc(primary)}" '
        f'data-other="{esc(other or "")}" data-blocks="{len(a.chain)}" '
        f'data-hashes="{esc(" ".join(a.block_hash_labels))}" '
        f'data-other-hashes="{esc(" ".join(b.block_hash_labels) if b else "")}">'
        + _summary(a, b)
        + f'<div class="chain{" two" if b else ""}">{columns}{"".join(rows)}</div>'
        + f'</div><div class="note">{said("chain.note")}</div>',
    )


def render_hash_cost(report: HashCostReport, where: str) -> str:
    rows = []
    for cost in report.costs:
        if cost.us_per_block is None:
            shown = f"needs {esc(cost.needs)}, which this page does not have"
            value = ""
        else:
            shown = f"{cost.us_per_block:,.2f} µs"
            value = f' data-us="{cost.us_per_block:.4f}"'
        rows.append(
            f'<tr data-name="{esc(cost.name)}"{value}><td><code>{esc(cost.name)}</code></td>'
            f"<td{' class=num' if value else ''}>{shown}</td><td>{esc(cost.what)}</td></tr>"
        )
    blocks = EXAMPLE_PROMPT_TOKENS // report.block_size
    ms = blocks * (report.cost("sha256").us_per_block or 0.0) / 1000
    measured = said(
        "chain.measured", size=report.block_size, blocks=report.blocks, where=esc(where)
    )
    example = said("chain.example", tokens=EXAMPLE_PROMPT_TOKENS, blocks=blocks, ms=ms)
    return panel(
        "hashing cost",
        "",
        f"<p>{measured}</p>"
        + table("<th>function</th><th class=num>per block</th><th></th>", "".join(rows))
        + f'<p data-testid="hash-cost-example">{example}</p>',
        ' data-testid="hash-cost"',
        "box hash-cost",
    )
