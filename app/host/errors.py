"""Callbacks from Panel swallow exceptions (and Pyodide hides them): log them instead."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger("prefix_cache_lab.app")


def logged(fn: Callable[P, R]) -> Callable[P, R | None]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except Exception:
            log.exception("callback %s failed", fn.__qualname__)
            return None

    return wrapper
