"""Each cached block's extra keys, as the pool and hash map views show them.

A block's extra keys are those of the chain link that made its hash: LoRA, the multimodal
items it reaches (with the item's offset from the block's first token), the cache salt,
the prompt embeddings' digest. The links carry them as the hash input's text; a cell
shows a short form of it ("img-cat +2", "salt alice").
"""

from __future__ import annotations

import ast

from engine.lab.play.vllm.snapshot import Snapshot

# The short form of each kind of key, from its fields after the tag.
_SHORT = {
    "lora": lambda fields: f"lora {fields[0]}",
    "mm": lambda fields: f"{fields[0]} {int(fields[1]):+d}",
    "cache_salt": lambda fields: f"salt {fields[0]}",
    "prompt_embeds": lambda fields: f"embeds {str(fields[0]).removeprefix('sha256:')[:8]}",
}


def extra_keys_by_label(snapshot: Snapshot) -> dict[str, str]:
    """Hash label -> the extra keys' text, for every hash a request's chain holds."""
    return {
        link.hash_label: link.extra_keys
        for request in snapshot.requests
        for link in request.chain
        if link.extra_keys
    }


def short_extra_keys(text: str) -> str:
    """``"('mm', 'img-cat', 2), ('cache_salt', 'a')"`` -> ``"img-cat +2 · salt a"``."""
    try:
        keys = ast.literal_eval(f"({text},)")
    except (ValueError, SyntaxError):
        return text
    parts = []
    for key in keys:
        short = _SHORT.get(key[0]) if isinstance(key, tuple) and key else None
        parts.append(short(key[1:]) if short else repr(key))
    return " · ".join(parts)
