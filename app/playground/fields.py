"""The playground editor's fields, without Panel: what each shows of a playground's data,
how what is typed into them plays, and what the editor says when it cannot.

The editor (app/views/editor.py, for the page's editor.js) and the static site's worker
(app/data/early_playground.py, which answers a playground link's early page before Panel
is installed) read and play the fields with these same functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.playground import store
from app.render.glossary import marked_terms, panel_texts
from app.render.html import esc
from engine.lab.play.scenario import SGLANG_MODES, ActionPlace, ScenarioError
from engine.lab.play.scenario_file import (
    MAX_BLOCK_SIZE,
    MAX_FILE_BYTES,
    MAX_POOL_BLOCKS,
    MIN_BLOCK_SIZE,
    MIN_POOL_BLOCKS,
)
from engine.lab.play.script_lines import field_places, format_lines, parse_numbered_lines

# The fields' names (editor.js's) and labels (content/panels.toml, as all its words).
TITLE, NUM_GPU_BLOCKS, BLOCK_SIZE = "title", "num_gpu_blocks", "block_size"
SGLANG, SETUP, SCRIPT = "sglang", "setup", "script"
TEXTS = panel_texts()["editor"]
LABELS: dict[str, str] = TEXTS["labels"]
# The fields with a message beside them (the editor shows it only when it says something).
MESSAGES = (NUM_GPU_BLOCKS, BLOCK_SIZE, "engines", SETUP, SCRIPT, "file")

BOTH_ENGINES = ["vllm", "sglang"]
# The [sglang] table a playground gets when the learner asks for SGLang: both policies.
DEFAULT_SGLANG: dict[str, Any] = {"modes": list(SGLANG_MODES)}
# The setup and script fields take as much text as a scenario file may hold (Panel's
# default of 5,000 characters cannot hold 500 add_request lines), and a text the browser
# cut at this length is refused with a message, never played cut short.
MAX_FIELD_CHARS = MAX_FILE_BYTES
# The playground editor's words (editor.js): its fields' labels, its heading and help,
# its buttons; the longest text a field takes.
EDITOR_TEXT: dict[str, Any] = {
    **TEXTS,
    "heading": marked_terms(TEXTS["heading"]),
    "help": marked_terms(TEXTS["help"]),
    "max_chars": MAX_FIELD_CHARS,
    "max_bytes": MAX_FILE_BYTES,
}


def plays_on_sglang(data: Mapping[str, Any]) -> bool:
    return "sglang" in data.get("engines", ["vllm"])


def with_engines(data: Mapping[str, Any], sglang: bool) -> dict[str, Any]:
    """``data`` on vLLM alone or on both engines; an ``[sglang]`` table it has (a fork's,
    with its narration) is kept, else both policies are played."""
    changed = {k: v for k, v in data.items() if k != "engines"}
    if sglang:
        changed["engines"] = BOTH_ENGINES
        changed.setdefault("sglang", DEFAULT_SGLANG)
    return changed


def message_html(text: str) -> str:
    """A field's message as the editor shows it ("": none)."""
    return f'<div class="pg-message" role="alert">{esc(text)}</div>' if text else ""


def shown(data: Mapping[str, Any]) -> dict[str, str | bool]:
    """What each field shows of ``data``, loaded whole (one action a line)."""
    pool = data.get("pool", {})
    return {
        TITLE: str(data.get("title", "")),
        NUM_GPU_BLOCKS: str(pool.get("num_gpu_blocks", 10)),
        BLOCK_SIZE: str(pool.get("block_size", 4)),
        SGLANG: plays_on_sglang(data),
        SETUP: format_lines(list(data.get("setup", []))),
        SCRIPT: format_lines(list(data.get("steps", []))),
    }


def field_lines(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """A field's actions with their line numbers, and its messages; a text at the
    field's length may have been cut."""
    if len(text) >= MAX_FIELD_CHARS:
        return [], [f"at most {MAX_FIELD_CHARS - 1:,} characters (the field cuts a longer text)"]
    return parse_numbered_lines(text)


def play(
    data: Mapping[str, Any], where: ActionPlace
) -> tuple[store.Playground | None, dict[str, str]]:
    """The playground ``data`` plays as (None: it cannot be played), and the script's
    and the engines' messages: the script plays on vLLM first, so a refusal on SGLang
    leaves it on vLLM alone, saying why. ``where`` names an action by its line."""
    try:
        playground = store.register(with_engines(data, False), where)
    except ScenarioError as error:
        return None, {SCRIPT: str(error)}
    messages = {SCRIPT: "", "engines": ""}
    if plays_on_sglang(data):
        try:
            playground = store.register(data, where)
        except ScenarioError as error:
            messages["engines"] = f"Cannot play on SGLang: {error}"
    return playground, messages


def pool_number(text: str, field: str, low: int, high: int) -> tuple[int | None, str]:
    """A pool field's number, or None and what is wrong with it."""
    value = text.strip()
    if not value.isascii() or not value.isdigit() or len(value) > 9:
        return None, f"{field} must be a whole number from {low:,} to {high:,}"
    if not low <= int(value) <= high:
        return None, f"{field} must be from {low:,} to {high:,}, not {int(value):,}"
    return int(value), ""


def collect(
    data: Mapping[str, Any], texts: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, ActionPlace | None, dict[str, str]]:
    """The fields' ``texts`` (name -> text, SGLANG -> a bool) as scenario data on top of
    ``data`` (the last valid data, which keeps what no field shows), its actions' lines,
    and each field's message; (None, None, messages) when a field is wrong."""
    text = lambda name: str(texts.get(name) or "")  # noqa: E731
    blocks, blocks_error = pool_number(
        text(NUM_GPU_BLOCKS), NUM_GPU_BLOCKS, MIN_POOL_BLOCKS, MAX_POOL_BLOCKS
    )
    size, size_error = pool_number(text(BLOCK_SIZE), BLOCK_SIZE, MIN_BLOCK_SIZE, MAX_BLOCK_SIZE)
    setup, setup_errors = field_lines(text(SETUP))
    steps, step_errors = field_lines(text(SCRIPT))
    messages = {
        NUM_GPU_BLOCKS: blocks_error,
        BLOCK_SIZE: size_error,
        SETUP: "; ".join(setup_errors[:3]),
        SCRIPT: "; ".join(step_errors[:3]),
    }
    if blocks is None or size is None or setup_errors or step_errors:
        return None, None, messages
    edited = with_engines(
        {k: v for k, v in data.items() if k not in ("setup", "steps")}, texts.get(SGLANG) is True
    )
    edited["title"] = text(TITLE) or "My scenario"
    edited["pool"] = {**data.get("pool", {}), "num_gpu_blocks": blocks, "block_size": size}
    if setup:
        edited["setup"] = [action for _, action in setup]
    edited["steps"] = [action for _, action in steps]
    return edited, field_places([n for n, _ in setup], [n for n, _ in steps]), messages


def edit(
    data: Mapping[str, Any], texts: Mapping[str, Any]
) -> tuple[store.Playground | None, dict[str, Any] | None, dict[str, str]]:
    """The fields' ``texts`` on top of ``data``, played as the editor plays them: the
    playground (None: it cannot be played), its data, and every field's message."""
    edited, places, messages = collect(data, texts)
    if edited is None or places is None:
        return None, None, messages
    playground, said = play(edited, places)
    return playground, edited, {**messages, **said}
