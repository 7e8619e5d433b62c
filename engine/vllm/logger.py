"""Loggers under vLLM's own names, so captured lines read like a vLLM server's log."""

from __future__ import annotations

import logging

# vLLM's loggers, and uvicorn's for the HTTP server in front of it.
LOGGER_ROOTS = {"vllm": logging.DEBUG, "uvicorn": logging.INFO}
for _name, _level in LOGGER_ROOTS.items():
    _root = logging.getLogger(_name)
    _root.setLevel(_level)
    # The simulated server's lines are the timeline's (the recorder attaches a handler
    # while it records; the page shows them in its log panel): they never reach the
    # host's root logger, so an app that configures logging (`panel serve`'s terminal,
    # Pyodide's console) does not print them as if real requests had hit it.
    _root.propagate = False
    # No output unless someone (the timeline recorder, a test) attaches a handler:
    # without this, Python's last-resort handler would print warnings to stderr.
    _root.addHandler(logging.NullHandler())


def init_logger(name: str) -> logging.Logger:
    """Return the logger vLLM uses in module ``name`` (e.g. ``vllm.v1.core.block_pool``)."""
    assert name.startswith("vllm."), name
    return logging.getLogger(name)
