"""A component's nested data sent to the browser as one JSON string.

Bokeh walks every value of a dict or list property, on each change, for models to
attach; a string it does not walk. The browser parses the string once per change
(JSON.parse), and Python reads it back through ParsedJson.
"""

from __future__ import annotations

import json
from typing import Any


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class ParsedJson:
    """A JSON string parameter read back in Python, parsed once per value."""

    def __init__(self) -> None:
        self._text: str | None = None
        self._value: Any = None

    def read(self, text: str) -> Any:
        if self._text is not text:
            self._text, self._value = text, json.loads(text)
        return self._value
