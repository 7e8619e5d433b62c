"""Knobs that make any lab preset's run small: a few ms, so unit tests can play many."""

from __future__ import annotations

SMALL_KNOBS = {"requests": 12, "shared_tokens": 64, "unique_tokens": 16, "output_tokens": 2}
