"""A LoRA adapter's id, as SGLang 0.5.23 gives one to an adapter loaded at start-up
(``lora/lora_registry.py``, ``LoRARef.deterministic_id``): a uuid5 of its name and path.

A request under an adapter has the id appended to its ``extra_key``
(``managers/schedule_batch.py:1165-1170``), so the adapter namespaces every child key
of the radix tree, as a salt does.
"""

from __future__ import annotations

from uuid import NAMESPACE_URL, uuid5


def deterministic_id(lora_name: str, lora_path: str) -> str:
    """The adapter's ``lora_id``: 32 hex digits, the same for the same name and path
    (``--lora-paths`` adapters; one loaded later gets a random uuid4 instead)."""
    return uuid5(NAMESPACE_URL, f"{lora_name}\0{lora_path}").hex


def lora_extra_key(extra_key: str | None, lora_id: str) -> str:
    """A request's ``extra_key`` under an adapter: the id appended to its own
    (``Req.__init__``, managers/schedule_batch.py:1165-1170)."""
    return (extra_key or "") + lora_id
