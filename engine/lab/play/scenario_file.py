"""A learner's own scenario: from a TOML file or a dict, in the ``content/scenarios`` format.

The format is the built-in scenarios' one (parsed by engine/lab/play/scenario.py); this
module adds what a file from anywhere needs before that parser sees it: the
shape of every table and list, no unknown keys, and the playground's limits,
each refused with one line that names the field.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.lab.play.scenario import (
    ACTION_FIELDS,
    MODES,
    ActionPlace,
    Scenario,
    ScenarioError,
    parse_scenario,
)

# A playground scenario is named after its data ("playground-" and a hash), so a
# file played by the CLI and the same scenario in the browser build byte-identical
# timelines, and two versions of a learner's scenario never share a name.
PLAYGROUND_PREFIX = "playground-"

MIN_POOL_BLOCKS, MAX_POOL_BLOCKS = 2, 10_000
MIN_BLOCK_SIZE, MAX_BLOCK_SIZE = 1, 64
MAX_ACTIONS = 500  # setup and steps together
MAX_ENGINE_STEPS = 2_000  # the script's steps, a `count` counting that many
MAX_FILE_BYTES = 1_000_000

TOP_KEYS = (
    "title",
    "summary",
    "order",
    "modes",
    "pool",
    "engine",
    "engines",
    "sglang",
    "setup",
    "steps",
    "narration",
)
POOL_KEYS = ("num_gpu_blocks", "block_size", "max_num_batched_tokens")
# Every action's own fields (engine/lab/play/scenario.py says which action takes which), after
# the keys every step may carry.
ACTION_KEYS = (
    "do",
    "say",
    "focus",
    *dict.fromkeys(key for keys in ACTION_FIELDS.values() for key in keys),
)


def _known_keys(table: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in known:
            raise ScenarioError(f"{where}: unknown key {key!r} (one of {', '.join(known)})")


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where} must be a table")
    return value


def _in_range(table: Mapping[str, Any], key: str, low: int, high: int, where: str) -> None:
    value = table.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and not low <= value <= high:
        raise ScenarioError(f"{where}.{key} must be from {low:,} to {high:,}, not {value:,}")


def check_shape(raw: Any) -> Mapping[str, Any]:
    """Refuse what the scenario parser would trip over, and the playground's limits."""
    data = _table(raw, "the scenario")
    _known_keys(data, TOP_KEYS, "the scenario")
    try:  # lone surrogates (from a JSON address) cannot be written to a file
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError):
        raise ScenarioError("the scenario holds text that is not valid Unicode") from None
    pool = _table(data.get("pool", {}), "pool")
    _known_keys(pool, POOL_KEYS, "pool")
    _in_range(pool, "num_gpu_blocks", MIN_POOL_BLOCKS, MAX_POOL_BLOCKS, "pool")
    _in_range(pool, "block_size", MIN_BLOCK_SIZE, MAX_BLOCK_SIZE, "pool")
    _in_range(
        _table(data.get("engine", {}), "engine"), "num_cpu_blocks", 2, MAX_POOL_BLOCKS, "engine"
    )
    modes = data.get("modes", [])
    if not isinstance(modes, list) or not all(isinstance(mode, str) for mode in modes):
        raise ScenarioError(f"modes must be a list of names ({', '.join(MODES)})")
    num_actions = num_steps = 0
    for part in ("setup", "steps"):
        actions = data.get(part, [])
        if not isinstance(actions, list):
            raise ScenarioError(f"{part} must be a list of actions")
        for i, action in enumerate(actions):
            where = f"{part} #{i + 1}"
            _known_keys(_table(action, where), ACTION_KEYS, where)
            count = action.get("count", 1)
            if part == "steps" and action.get("do") in ("step", "run_until_idle"):
                num_steps += count if isinstance(count, int) and count > 0 else 1
        num_actions += len(actions)
    if num_actions > MAX_ACTIONS:
        raise ScenarioError(
            f"{num_actions} actions is more than {MAX_ACTIONS} (setup and script together)"
        )
    if num_steps > MAX_ENGINE_STEPS:
        raise ScenarioError(
            f"the script's {num_steps:,} engine steps is more than {MAX_ENGINE_STEPS:,}"
        )
    for key, text in _table(data.get("narration", {}), "narration").items():
        texts = text if isinstance(text, Mapping) else {key: text}
        if not all(isinstance(t, str) for t in texts.values()):
            raise ScenarioError(f"narration.{key} must be text or a table of texts")
    return data


def playground_name(data: Mapping[str, Any]) -> str:
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return PLAYGROUND_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def scenario_from_dict(data: Any, where: ActionPlace | None = None) -> Scenario:
    """A playground scenario from its data (a parsed TOML file, or a decoded address);
    ``where`` names an action in messages (the editor's lines)."""
    checked = check_shape(data)
    name = playground_name(checked)
    if "modes" not in checked:  # every mode, so the learner can compare them
        checked = {**checked, "modes": list(MODES)}
    try:
        return parse_scenario(name, checked, where)
    except (TypeError, AttributeError, KeyError) as error:  # a shape check_shape missed
        raise ScenarioError(f"the scenario is malformed ({type(error).__name__})") from None


def parse_toml(text: str) -> dict[str, Any]:
    """The data of a scenario file's text, checked (not yet played)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"not valid TOML: {error}") from None
    except RecursionError:
        raise ScenarioError("not valid TOML: nested too deeply") from None
    scenario_from_dict(data)
    return data


def read_toml(path: str | Path) -> dict[str, Any]:
    """The checked data of a scenario file."""
    try:
        raw = Path(path).read_bytes()[: MAX_FILE_BYTES + 1]
    except OSError as error:
        raise ScenarioError(f"cannot read {str(path)!r}: {error.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(f"{str(path)!r} is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(f"{str(path)!r} is not UTF-8 text") from None
    return parse_toml(text)


def load_scenario_file(path: str | Path) -> Scenario:
    """A scenario from a TOML file in the ``content/scenarios`` format."""
    return scenario_from_dict(read_toml(path))
