"""The playground's script as lines of text: one action per line, and back.

A line is the action's ``do`` name, its main argument, any other field as
``key=value``, and last the prompt after ``prompt:`` (token ids and ranges) or
``text:`` (plain text, engine/lab/shared/tokenizer.py)::

    add_request A max_tokens=3 cache_salt=u1 prompt: 1..12, 40, 41
    add_request B text: You are a helpful assistant. Hello!
    add_request C mm_items=cat:8:6 prompt_embeds=notes:16:4 prompt: 1..8, 51..56, 101..110
    step 3
    run_until_idle
    reset_prefix_cache keep
    abort A

Inserting, deleting and reordering actions is editing lines. A line becomes
the same table as a ``[[steps]]`` entry of a scenario file; the engine checks
the values (engine/lab/play/scenario.py), this only reads the layout of a line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from engine.lab.play.request_extras import EMBEDS_FIELDS, MM_FIELDS, format_runs
from engine.lab.play.scenario import ACTION_KINDS, ActionPlace, ScenarioError, parse_action

# The one argument each action takes without a key.
MAIN_ARGUMENT = {"add_request": "id", "abort": "id", "step": "count"}
RESET_MODES: dict[str, dict[str, bool]] = {
    "default": {"reset_running_requests": False, "keep_running_requests": False},
    "preempt": {"reset_running_requests": True, "keep_running_requests": False},
    "keep": {"reset_running_requests": False, "keep_running_requests": True},
}
TEXT_KEYS = ("id", "cache_salt", "lora_name", "say", "focus", "query", "mm_items", "prompt_embeds")
# A file's tables for these, in a line's one-word form: ``mm_items=cat:8:6,dog:20:6``.
RUN_FIELDS = {"mm_items": MM_FIELDS, "prompt_embeds": EMBEDS_FIELDS}
_PROMPT = re.compile(r"(?:^|\s)(prompt|text):")
_INT = re.compile(r"-?\d{1,9}")
MAX_HEAD_CHARS = 2_000  # a line's words before its prompt


def _value(key: str, text: str) -> Any:
    if key in TEXT_KEYS:
        return text
    if text in ("true", "false"):
        return text == "true"
    return int(text) if _INT.fullmatch(text) else text


def unknown_action(kind: str) -> ScenarioError:
    return ScenarioError(f"unknown action {kind!r} (one of {', '.join(ACTION_KINDS)})")


def parse_line(line: str) -> dict[str, Any] | None:
    """The action a line describes; None for a blank line or a ``#`` comment."""
    if not line.strip() or line.lstrip().startswith("#"):
        return None
    head, prompt_key, prompt = line, "", ""
    found = _PROMPT.search(line)
    if found:
        head, prompt_key, prompt = line[: found.start()], found.group(1), line[found.end() :]
    if len(head) > MAX_HEAD_CHARS:  # shlex takes ~0.1 ms a character: refused unread
        kind = head.split(maxsplit=1)[0]
        if kind not in ACTION_KINDS:
            raise unknown_action(kind)
        raise ScenarioError(
            f"{kind}: its words are {len(head):,} characters, more than {MAX_HEAD_CHARS:,} "
            "(a prompt goes after prompt: or text:)"
        )
    try:
        words = shlex.split(head)
    except ValueError as error:  # an unclosed quote
        raise ScenarioError(f"{error}") from None
    kind = words[0] if words else ""
    if kind not in ACTION_KINDS:
        raise unknown_action(kind)
    action: dict[str, Any] = {"do": kind}
    mode = ""  # reset_prefix_cache's mode word
    for word in words[1:]:
        key, equals, text = word.partition("=")
        if equals and key.isidentifier():
            if mode and key in RESET_MODES[mode]:
                raise ScenarioError(f"{kind}: give the mode {mode!r} or {key}, not both")
            if key in action:
                raise ScenarioError(f"{kind}: {key} is given twice")
            action[key] = _value(key, text)
        elif kind == "reset_prefix_cache" and word in RESET_MODES:
            if mode:
                raise ScenarioError(f"{kind} takes one mode, not both {mode!r} and {word!r}")
            given = [key for key in RESET_MODES[word] if key in action]
            if given:
                raise ScenarioError(f"{kind}: give the mode {word!r} or {given[0]}, not both")
            mode = word
            action.update(RESET_MODES[word])
        elif kind in MAIN_ARGUMENT and MAIN_ARGUMENT[kind] not in action:
            action[MAIN_ARGUMENT[kind]] = _value(MAIN_ARGUMENT[kind], word)
        else:
            raise ScenarioError(f"{kind}: unexpected {word!r} (a field is key=value)")
    if prompt_key:
        if kind != "add_request":
            raise ScenarioError(f"{kind} takes no {prompt_key}")
        action["prompt_text" if prompt_key == "text" else "prompt"] = prompt.strip()
    return action


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return shlex.quote(str(value))


def format_action(action: Mapping[str, Any]) -> str:
    """The line for an action table (a ``[[steps]]`` entry)."""
    kind = str(action.get("do", ""))
    rest = dict(action)
    rest.pop("do", None)
    words = [kind]
    main = MAIN_ARGUMENT.get(kind)
    if main in rest:
        words.append(_word(rest.pop(main)))
    if kind == "reset_prefix_cache":
        flags = {k: rest[k] for k in RESET_MODES["default"] if k in rest}
        mode = next((m for m, f in RESET_MODES.items() if f == flags), None)
        if mode is not None:
            words.append(mode)
            for key in flags:
                rest.pop(key)
    prompt = rest.pop("prompt", None)
    text = rest.pop("prompt_text", None)
    words += [
        f"{key}={_word(format_runs(value, RUN_FIELDS[key]) if key in RUN_FIELDS else value)}"
        for key, value in rest.items()
    ]
    if prompt is not None:
        parts = prompt if isinstance(prompt, list) else [prompt]
        words.append("prompt: " + ", ".join(str(part) for part in parts))
    if text is not None:
        words.append("text: " + " ".join(str(text).split()))
    return " ".join(words)


def line_place(number: int) -> str:
    """How a message names a line of a field."""
    return f"line {number}"


def field_places(setup: list[int] | None, script: list[int]) -> ActionPlace:
    """Names each action by its line in the editor's fields (the line numbers of the
    setup's and the script's actions; None: the setup as format_lines writes it, one
    action a line): "line 3" in the script, "setup line 2" in the setup."""

    def place(part: str, index: int) -> str:
        if part == "setup":
            return "setup " + line_place(setup[index] if setup is not None else index + 1)
        return line_place(script[index])

    return place


def parse_numbered_lines(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """The actions of a script with their line numbers, and a message per line that
    cannot be read or whose action the engine refuses on its own (engine/lab/play/scenario.py
    parse_action: a field it does not use, a bad prompt)."""
    actions: list[tuple[int, dict[str, Any]]] = []
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            action = parse_line(line)
        except ScenarioError as error:
            errors.append(f"{line_place(number)}: {error}")
            continue
        if action is None:
            continue
        try:
            parse_action(action, line_place(number))
        except ScenarioError as error:
            errors.append(str(error))
            continue
        actions.append((number, action))
    return actions, errors


def parse_lines(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The actions of a script, and a message per line that cannot be played."""
    numbered, errors = parse_numbered_lines(text)
    return [action for _, action in numbered], errors


def format_lines(actions: list[Mapping[str, Any]]) -> str:
    return "\n".join(format_action(action) for action in actions)
