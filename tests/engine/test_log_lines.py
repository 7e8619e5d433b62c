"""Every log line the engine writes is one vLLM 0.33.0 writes, under the same logger.

The table holds each line's format string as it stands in vLLM 0.33.0's source,
with the name of the module that writes it (``init_logger(__name__)``), and
uvicorn's two lines. A logged exception is followed by its traceback.
"""

from __future__ import annotations

import logging
import re

import pytest

from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.vllm.timeline import build_timeline

VLLM_LINES: dict[str, tuple[str, ...]] = {
    # vllm/v1/core/block_pool.py, BlockPool.reset_prefix_cache
    "vllm.v1.core.block_pool": (
        "Failed to reset prefix cache because some blocks (%d) are not freed yet",
        "Successfully reset prefix cache",
    ),
    # vllm/v1/engine/core.py: _invoke_utility_method and run_engine_core
    "vllm.v1.engine.core": (
        "Invocation of %s method failed",
        "EngineCore encountered a fatal error.",
    ),
    # vllm/entrypoints/serve/dev/cache/api_router.py, reset_prefix_cache
    "vllm.entrypoints.serve.dev.cache.api_router": ("Resetting prefix cache...",),
    # vllm/entrypoints/serve/exception_handling/handlers/{exception,validation}.py
    "vllm.entrypoints.serve.exception_handling.handlers.exception": (
        "Exception caught. Request id: %s",
    ),
    "vllm.entrypoints.serve.exception_handling.handlers.validation": (
        "RequestValidationError caught. Request id: %s",
    ),
    # vllm/v1/simple_kv_offload/manager.py
    "vllm.v1.simple_kv_offload.manager": (
        "Request %s: Scheduling store of %d blocks to CPU (%d groups)",
        "Store event %d completed: cached %d blocks to CPU",
    ),
    # uvicorn: the access line as its formatter prints it, and the unhandled error
    "uvicorn.access": ('%s - "%s %s HTTP/%s" %d %s',),
    "uvicorn.error": ("Exception in ASGI application",),
}
TRACEBACK = re.compile(r"\nTraceback \(most recent call last\):\n  \.\.\.\n\w+(: .*)?$", re.S)


def pattern(format_string: str) -> re.Pattern[str]:
    parts = re.split(r"(%[ds])", format_string)
    regex = "".join({"%d": r"-?\d+", "%s": r".*?"}.get(part, re.escape(part)) for part in parts)
    return re.compile(regex + "$", re.S)


CASES = [(name, mode) for name in scenario_names() for mode in load_scenario(name).modes]


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_every_log_line_is_one_vllm_writes(name: str, mode: str) -> None:
    timeline = build_timeline(load_scenario(name), mode, trace=False)
    for step in timeline.steps:
        for line in step.snapshot.logs:
            assert line.logger in VLLM_LINES, line
            message = TRACEBACK.sub("", line.message)
            assert any(pattern(f).match(message) for f in VLLM_LINES[line.logger]), line


def test_the_table_covers_what_the_scenarios_log() -> None:
    """Each entry is used, so the table cannot drift from what the engine writes."""
    seen = {
        line.logger
        for name, mode in CASES
        for step in build_timeline(load_scenario(name), mode, trace=False).steps
        for line in step.snapshot.logs
    }
    # the validation handler's line needs a malformed query: test_api_layer has one
    assert set(VLLM_LINES) - seen == {
        "vllm.entrypoints.serve.exception_handling.handlers.validation"
    }


def test_the_simulated_server_logs_into_the_timeline_only() -> None:
    """An app that configures logging (`panel serve` calls basicConfig; Pyodide's stderr
    is the browser console) must not print the simulated server's lines as if real
    requests had hit it: they reach the timeline's log, not the root logger."""
    heard: list[logging.LogRecord] = []
    root = logging.getLogger()
    handler = logging.Handler(logging.DEBUG)
    handler.emit = heard.append  # type: ignore[method-assign]
    root.addHandler(handler)
    try:
        timelines = [
            build_timeline(load_scenario(name), load_scenario(name).modes[0], trace=False)
            for name in ("reset", "api-layer")  # vLLM's lines, and uvicorn's access lines
        ]
    finally:
        root.removeHandler(handler)
    logged = {line.logger for t in timelines for step in t.steps for line in step.snapshot.logs}
    assert "uvicorn.access" in logged and "vllm.v1.core.block_pool" in logged
    assert [r.getMessage() for r in heard if r.name.startswith(("vllm", "uvicorn"))] == []
