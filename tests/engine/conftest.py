"""Fixtures for the engine's tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from engine.vllm.logger import LOGGER_ROOTS


@pytest.fixture
def vllm_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """caplog, hearing the simulated server's loggers (they do not propagate to the root
    logger caplog listens on: engine/vllm/logger.py)."""
    loggers = [logging.getLogger(name) for name in LOGGER_ROOTS]
    for logger in loggers:
        logger.addHandler(caplog.handler)
    caplog.set_level(logging.DEBUG, logger="vllm")
    try:
        yield caplog
    finally:
        for logger in loggers:
            logger.removeHandler(caplog.handler)
