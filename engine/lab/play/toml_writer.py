"""Scenario data -> TOML text (``tomllib`` only reads).

Enough of TOML for the scenario format: tables, arrays of tables, strings,
whole numbers, booleans, floats and inline arrays of those. What it writes,
``tomllib.loads`` reads back as the same data.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    # JSON's escapes are TOML's basic-string escapes; TOML also refuses a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"TOML has no value for {type(value).__name__}")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _table_lines(table: Mapping[str, Any], path: tuple[str, ...]) -> list[str]:
    """Key/value lines first (they belong to the header above them), then sub-tables."""
    lines = [
        f"{_key(k)} = {_value(v)}"
        for k, v in table.items()
        if not isinstance(v, Mapping) and not _is_table_array(v)
    ]
    for key, value in table.items():
        sub = (*path, _key(key))
        if isinstance(value, Mapping):
            lines += ["", f"[{'.'.join(sub)}]", *_table_lines(value, sub)]
        elif _is_table_array(value):
            for item in value:
                lines += ["", f"[[{'.'.join(sub)}]]", *_table_lines(item, sub)]
    return lines


def dumps(data: Mapping[str, Any]) -> str:
    """TOML text for ``data`` (a table of tables, arrays of tables and values)."""
    lines = _table_lines(data, ())
    return "\n".join(lines).lstrip("\n") + "\n"
