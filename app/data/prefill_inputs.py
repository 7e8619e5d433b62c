"""The prefill-cost calculator's inputs: text fields parsed into checked numbers.

Pure functions, so every bad input has a tested message and never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.lab.shared.prefill_cost import LLAMA_3_8B, ModelShape

# The seed's worked example: 2,000 shared tokens of a 2,200-token prompt, on an
# H100 at 45 % MFU.
SEED_PROMPT = 2200
SEED_CACHED = 2000
SEED_FLOPS = 445e12

FIELDS: dict[str, str] = {  # name -> label
    "num_parameters": "P (parameters)",
    "num_layers": "L (layers)",
    "num_heads": "h (query heads)",
    "head_dim": "d_h (head dim)",
    "prompt_tokens": "prompt tokens",
    "cached_tokens": "cached prefix (tokens)",
    "flops_per_second": "achieved FLOP/s",
}
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
        errors.append(
            "The cached prefix must be shorter than the prompt: vLLM recomputes at least "
            "the last token to get its logits."
        )
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
