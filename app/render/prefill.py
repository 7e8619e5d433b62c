"""What a hit saves: prefill FLOPs and time with and without the cached prefix.

The arithmetic is the engine's (engine.lab.shared.prefill_cost); this view parses the
fields into checked numbers (pure functions: every bad input has a tested message, never
an exception), follows the current step's request until the learner types, and shows
the result or an inline message. While it follows, every step's result and fields
are in the browser (app/components/prefill_deck.js), so it steps with the page, before
Python too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from app.render.glossary import panel_texts, said
from app.render.html import esc, panel, table
from engine.lab.play.vllm.snapshot import RequestRecord, Snapshot
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.prefill_cost import LLAMA_3_8B, ModelShape, prefill_cost

# The seed's worked example: 2,000 shared tokens of a 2,200-token prompt, on an
# H100 at 45 % MFU.
SEED_PROMPT = 2200
SEED_CACHED = 2000
SEED_FLOPS = 445e12
# Where the fields' numbers come from, when not from a step's request (follow).
OWN_INPUTS, THE_EXAMPLE = said("prefill.own_inputs"), said("prefill.the_example")

FIELDS: dict[str, str] = panel_texts()["prefill"]["fields"]  # name -> label
INTEGER_FIELDS = frozenset(
    {"num_layers", "num_heads", "head_dim", "prompt_tokens", "cached_tokens"}
)


@dataclass(frozen=True)
class PrefillInputs:
    model: ModelShape
    prompt_tokens: int
    cached_tokens: int
    flops_per_second: float


def model_texts(model: ModelShape = LLAMA_3_8B) -> dict[str, str]:
    return {
        "num_parameters": f"{model.num_parameters:g}",
        "num_layers": str(model.num_layers),
        "num_heads": str(model.num_heads),
        "head_dim": str(model.head_dim),
    }


def seed_texts() -> dict[str, str]:
    return {
        **model_texts(),
        "prompt_tokens": str(SEED_PROMPT),
        "cached_tokens": str(SEED_CACHED),
        "flops_per_second": f"{SEED_FLOPS:g}",
    }


def _number(name: str, text: str) -> float | int | str:
    """The field's value, or a message saying what is wrong with it."""
    label = FIELDS[name]
    cleaned = text.strip().replace(",", "").replace("_", "")
    if not cleaned:
        return f"{label} is empty."
    try:
        value = float(cleaned)
    except ValueError:
        return f"{label} must be a number, not {text.strip()!r}."
    if value != value or value in (float("inf"), float("-inf")):
        return f"{label} must be a finite number."
    if name in INTEGER_FIELDS:
        if not value.is_integer():
            return f"{label} must be a whole number."
        return int(value)
    return value


def parse_inputs(texts: dict[str, str]) -> PrefillInputs | list[str]:
    """Checked inputs, or the list of messages naming every problem."""
    values: dict[str, float | int] = {}
    errors: list[str] = []
    for name in FIELDS:
        value = _number(name, texts.get(name, ""))
        if isinstance(value, str):
            errors.append(value)
        else:
            values[name] = value
    for name, value in values.items():
        minimum = 0 if name == "cached_tokens" else 1
        if value < minimum:
            errors.append(f"{FIELDS[name]} must be {'at least 0' if minimum == 0 else 'positive'}.")
    prompt, cached = values.get("prompt_tokens"), values.get("cached_tokens")
    if prompt is not None and cached is not None and cached >= 0 and cached >= prompt >= 1:
        errors.append(said("prefill.cached_too_long"))
    if errors:
        return errors
    model = ModelShape(
        "custom",
        float(values["num_parameters"]),
        int(values["num_layers"]),
        int(values["num_heads"]),
        int(values["head_dim"]),
    )
    return PrefillInputs(
        model=LLAMA_3_8B if model_texts(model) == model_texts() else model,
        prompt_tokens=int(values["prompt_tokens"]),
        cached_tokens=int(values["cached_tokens"]),
        flops_per_second=float(values["flops_per_second"]),
    )


def step_request(snapshot: Snapshot) -> RequestRecord | None:
    """The most recently admitted request (its prefix-cache hit is known)."""
    admitted = [r for r in snapshot.requests if r.num_cached_tokens >= 0]
    return admitted[-1] if admitted else None


def format_flops(flops: float) -> str:
    if flops >= 1e12:
        return f"{flops / 1e12:,.2f} TFLOP"
    return f"{flops / 1e9:,.2f} GFLOP"


def format_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} µs"


def render_prefill(
    inputs: PrefillInputs | list[str], source: str, texts: dict[str, str] | None = None
) -> str:
    """The result for ``inputs``; ``texts``, the fields as typed, go into the page (its
    `data-fields`), so the fields show the inputs of the page shown (prefill_deck.js)."""
    fields = f" data-fields='{esc(json.dumps(texts))}'" if texts is not None else ""
    if isinstance(inputs, list):
        items = "".join(f"<li>{esc(e)}</li>" for e in inputs)
        result = (
            '<div data-testid="prefill-cost" data-valid="false" class="bad" role="alert">'
            f"<b>Cannot compute:</b><ul>{items}</ul></div>"
        )
    else:
        result = render_cost(inputs)
    body = f'<div class="note src">{source}</div>{result}'
    return panel("prefill cost", "Prefill cost of this prompt", body, fields, "box prefill")


def render_cost(inputs: PrefillInputs) -> str:
    cost = prefill_cost(
        inputs.prompt_tokens, inputs.cached_tokens, inputs.flops_per_second, inputs.model
    )
    rows = (
        ("without cache", cost.flops_without_cache, cost.seconds_without_cache),
        (f"with {cost.cached_tokens:,} cached", cost.flops_with_cache, cost.seconds_with_cache),
    )
    body = "".join(
        f"<tr><td>{what}</td><td class=num>{format_flops(flops)}</td>"
        f"<td class=num>{format_seconds(seconds)}</td></tr>"
        for what, flops, seconds in rows
    )
    columns = f"<th>{cost.prompt_tokens:,} prompt tokens</th><th class=num>FLOPs</th>"
    return (
        f'<div data-testid="prefill-cost" data-valid="true" '
        f'data-flops-without="{cost.flops_without_cache:.6e}" '
        f'data-flops-with="{cost.flops_with_cache:.6e}" data-speedup="{cost.speedup:.4f}" '
        f'data-redundant="{cost.redundant_fraction:.6f}" '
        f'data-seconds-saved="{cost.seconds_saved:.6e}">'
        f"{table(columns + '<th class=num>time</th>', body)}"
        '<dl class="metrics big">'
        '<div class="metric"><dt>speedup</dt>'
        f'<dd data-k="speedup">{cost.speedup:.1f}&times;</dd></div>'
        f'<div class="metric"><dt>redundant</dt><dd data-k="redundant">'
        f"{cost.redundant_fraction * 100:.1f} %</dd></div>"
        f'<div class="metric"><dt>time saved</dt><dd data-k="saved">'
        f"{format_seconds(cost.seconds_saved)}</dd></div></dl>"
        "</div>"
        f'<div class="note">{said("prefill.note")}</div>'
    )


def follow(snapshot: Snapshot, base: dict[str, str]) -> tuple[dict[str, str], str]:
    """The fields while they follow a step, and where they come from: the step's latest
    admitted request (the learner's model and FLOP/s kept), or else the agent-prompt example."""
    request = step_request(snapshot)
    if request is None:
        return seed_texts(), said("prefill.no_request")
    texts = {
        **base,
        "prompt_tokens": str(request.num_prompt_tokens),
        "cached_tokens": str(request.num_cached_tokens),
        "flops_per_second": base.get("flops_per_second") or seed_texts()["flops_per_second"],
    }
    return texts, said(
        "prefill.from_request",
        request=esc(request.request_id),
        prompt=request.num_prompt_tokens,
        cached=request.num_cached_tokens,
    )


def follow_page(timeline: Timeline, step: int, base: dict[str, str]) -> str:
    texts, source = follow(timeline.steps[step].snapshot, base)
    return render_prefill(parse_inputs(texts), source, texts)
