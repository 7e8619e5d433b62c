"""The playground editor's fields, without Panel: what each shows of a playground's data,
how a script typed into them plays, and what the editor says when it cannot.

The editor (editor.py) and the static site's worker (app/data/early_playground.py,
which answers a playground link's early page before Panel is installed) read and play
the fields with these same functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.playground import store
from app.playground.script_lines import field_places, format_lines, parse_numbered_lines
from app.render.html import esc
from engine.lab.play.scenario import SGLANG_MODES, ActionPlace, ScenarioError
from engine.lab.play.scenario_file import MAX_FILE_BYTES

# The fields' labels (the early page fills its stand-ins by the same names).
TITLE, NUM_GPU_BLOCKS, BLOCK_SIZE = "title", "num_gpu_blocks", "block_size"
SGLANG, SETUP, SCRIPT = "sglang", "setup", "script"
LABELS = {
    TITLE: "Title",
    NUM_GPU_BLOCKS: "GPU blocks (num_gpu_blocks)",
    BLOCK_SIZE: "Block size (tokens)",
    SGLANG: "Also on SGLang",
    SETUP: "Setup (runs before step 0)",
    SCRIPT: "Script (one action per line)",
}
# The fields with a message beside them (the editor shows it only when it says something).
MESSAGES = (NUM_GPU_BLOCKS, BLOCK_SIZE, "engines", SETUP, SCRIPT, "file")

BOTH_ENGINES = ["vllm", "sglang"]
# The [sglang] table a playground gets when the learner asks for SGLang: both policies.
DEFAULT_SGLANG: dict[str, Any] = {"modes": list(SGLANG_MODES)}
# The setup and script fields take as much text as a scenario file may hold (Panel's
# default of 5,000 characters cannot hold 500 add_request lines), and a text the browser
# cut at this length is refused with a message, never played cut short.
MAX_FIELD_CHARS = MAX_FILE_BYTES


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


def play_script(
    data: Mapping[str, Any], script: str
) -> tuple[store.Playground | None, dict[str, str]]:
    """``data`` with the script field's text as its script (its other fields as
    ``shown`` shows them), played as the editor plays it."""
    steps, errors = field_lines(script)
    if errors:
        return None, {SCRIPT: "; ".join(errors[:3])}
    edited = {**data, "steps": [action for _, action in steps]}
    return play(edited, field_places(None, [n for n, _ in steps]))
