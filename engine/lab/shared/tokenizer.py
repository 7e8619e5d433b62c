"""A toy text tokenizer for the playground: plain text -> token ids, deterministically.

vLLM would run the model's tokenizer; the prefix cache only ever sees the ids.
This one is meant to be predictable by a reader, not to be a real tokenizer:

1. the text is split into *words* (runs of letters, digits and ``_``) and single
   punctuation marks; whitespace only separates and yields no token;
2. each piece becomes ``FIRST_TEXT_TOKEN_ID + (first 4 bytes of SHA-256 of its
   UTF-8 bytes, big-endian) mod TEXT_TOKEN_ID_SPAN``. Case is kept ("The" and
   "the" differ).

So the same word is always the same id, on every machine and in Pyodide, and two
prompts that begin with the same words begin with the same token ids: they share
a token prefix, and so their full blocks share block hashes. Ids sit far above
the range scenarios type by hand (``1..12``) and the stand-in model's generated
tokens (50,000 and up), so typed text never collides with either by accident.
"""

from __future__ import annotations

import hashlib
import re

FIRST_TEXT_TOKEN_ID = 1_000_000
TEXT_TOKEN_ID_SPAN = 1_000_000

# A word, or one character that is neither a word character nor whitespace.
_PIECE = re.compile(r"\w+|[^\w\s]")


def split_text(text: str) -> list[str]:
    """The pieces the text is cut into (each becomes one token)."""
    return _PIECE.findall(text)


def token_id(piece: str) -> int:
    digest = hashlib.sha256(piece.encode("utf-8")).digest()
    return FIRST_TEXT_TOKEN_ID + int.from_bytes(digest[:4], "big") % TEXT_TOKEN_ID_SPAN


def tokenize(text: str) -> tuple[int, ...]:
    """Token ids of ``text``: one per word or punctuation mark, in order."""
    return tuple(token_id(piece) for piece in split_text(text))
