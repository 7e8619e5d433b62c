"""A message quotes at most ~80 characters of what it was given.

A learner's line, a file's value or an address's parameter is quoted back in the message
that refuses it (``'explode'`` is not an action); a pasted line of a million characters
must not come back whole (it took 12.5 s and a page 6.5 million px wide). Each error
class that carries such a message (scenario, trace, workload knob) shortens its own, so
the CLI, the playground and the address's notices all show the short form.
"""

from __future__ import annotations

import re

QUOTE_LIMIT = 80  # characters of a quoted value kept in a message
# A Python repr of a string, in either quote (its own quote escaped inside it).
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")


def shorten_quotes(message: str, limit: int = QUOTE_LIMIT) -> str:
    """``message`` with every quoted value longer than ``limit`` characters cut to its
    first ``limit`` and its length said; the rest of the message as it was."""

    def shorten(found: re.Match[str]) -> str:
        text = found.group(0)
        inner = text[1:-1]
        if len(inner) <= limit:
            return text
        return f"{text[0]}{inner[:limit]}…{text[0]} ({len(inner):,} characters)"

    return _QUOTED.sub(shorten, message)
