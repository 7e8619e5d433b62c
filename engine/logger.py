"""Loggers under vLLM's own names, so captured lines read like a vLLM server's log."""

from __future__ import annotations

import logging

_ROOT = logging.getLogger("vllm")
_ROOT.setLevel(logging.DEBUG)
# No output unless someone (the timeline recorder, a test) attaches a handler:
# without this, Python's last-resort handler would print warnings to stderr.
_ROOT.addHandler(logging.NullHandler())


def init_logger(name: str) -> logging.Logger:
    """Return the logger vLLM uses in module ``name`` (e.g. ``vllm.v1.core.block_pool``)."""
    assert name.startswith("vllm."), name
    return logging.getLogger(name)
