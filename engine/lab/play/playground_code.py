"""A whole playground scenario as one URL-safe word, and back: JSON -> zlib -> base64url.

The code is what ``?playground=`` carries, so a link reopens the learner's
scenario exactly. Decoding trusts nothing: the code's length and alphabet, the
inflated size (no zip bomb), the JSON's depth and the data's shape are checked,
and every failure is a ScenarioError with one line.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Mapping
from typing import Any

from engine.lab.play.scenario import ScenarioError

VERSION = "p1."  # a code starts with its format's version
MAX_CODE_CHARS = 16_000  # browsers and servers keep addresses well below 64 KB
MAX_JSON_BYTES = 512_000
_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")


def encode(data: Mapping[str, Any]) -> str:
    """The code for ``data``; refused if it would make too long an address."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    packed = zlib.compress(text.encode("utf-8"), 9)
    code = VERSION + base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")
    if len(code) > MAX_CODE_CHARS:
        raise ScenarioError(
            f"the playground is too large for an address ({len(code):,} characters, "
            f"at most {MAX_CODE_CHARS:,}): export it as a file instead"
        )
    return code


def decode(code: str) -> dict[str, Any]:
    """The data a code holds (its shape is checked by scenario_from_dict, not here)."""
    if len(code) > MAX_CODE_CHARS:
        raise ScenarioError(f"playground code is longer than {MAX_CODE_CHARS:,} characters")
    if not code.startswith(VERSION):
        raise ScenarioError(f"playground code must start with {VERSION!r}")
    body = code[len(VERSION) :]
    if not _ALPHABET.fullmatch(body):
        raise ScenarioError("playground code has characters outside A-Z a-z 0-9 - _")
    try:
        packed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_JSON_BYTES)
        if inflater.unconsumed_tail:
            raise ScenarioError(f"playground code unpacks to more than {MAX_JSON_BYTES:,} bytes")
        if not inflater.eof:
            raise ScenarioError("playground code is cut short")
        data = json.loads(raw.decode("utf-8"))
    except ScenarioError:
        raise
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError):
        raise ScenarioError("playground code is damaged (not a code this app wrote)") from None
    except RecursionError:
        raise ScenarioError("playground code is nested too deeply") from None
    if not isinstance(data, dict):
        raise ScenarioError("playground code does not hold a scenario")
    return data
