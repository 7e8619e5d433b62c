"""The API layer: 400 for the flag combination before any engine call; 500 without the check."""

from __future__ import annotations

import pytest

from engine.api_server import APIServer, EngineCoreClient, HTTPRequest
from engine.core import EngineCore
from engine.scenario import load_scenario
from engine.scheduler import Scheduler
from engine.timeline import Step, Timeline, build_timeline

BOTH = "reset_running_requests=true&keep_running_requests=true"


@pytest.fixture(scope="module")
def timeline() -> Timeline:
    return build_timeline(load_scenario("api-layer"), "keep")


def step_of(timeline: Timeline, key: str) -> Step:
    return next(s for s in timeline.steps if s.narration_key == key)


def ran(step: Step) -> set[str]:
    return {trace.qualname for trace in step.code}


def test_the_python_api_raises_value_error(timeline: Timeline) -> None:
    step = step_of(timeline, "python_api")
    assert step.result is not None and step.result.startswith("ValueError: ")
    assert "Scheduler.reset_prefix_cache" in ran(step)
    assert step.snapshot.hash_map == timeline.steps[0].snapshot.hash_map  # nothing changed


def test_http_answers_400_before_any_engine_call(timeline: Timeline) -> None:
    step = step_of(timeline, "http_400")
    assert step.label == f"POST /reset_prefix_cache?{BOTH}"
    assert step.result == (
        "HTTP 400 Bad Request: reset_running_requests and keep_running_requests cannot both be true"
    )
    names = ran(step)
    assert "reset_prefix_cache" in names  # the handler
    assert not any(
        name.startswith(("EngineCore", "Scheduler", "EngineCoreClient")) for name in names
    )
    assert all(trace.file == "engine/api_server.py" for trace in step.code)
    assert step.focus is not None and step.focus.qualname == "reset_prefix_cache"
    assert [(line.logger, line.message.split('"')[1]) for line in step.snapshot.logs] == [
        ("uvicorn.access", f"POST /reset_prefix_cache?{BOTH} HTTP/1.1")
    ]
    assert step.snapshot.logs[0].message.endswith("400 Bad Request")


def test_without_the_check_the_engine_cores_value_error_becomes_a_500(timeline: Timeline) -> None:
    step = step_of(timeline, "http_500")
    assert step.label.endswith("(no flag check)")
    assert step.result == "HTTP 500 Internal Server Error"
    names = ran(step)
    assert {"EngineCoreClient.call_utility", "Scheduler.reset_prefix_cache"} <= names
    errors = [line for line in step.snapshot.logs if line.level == "ERROR"]
    assert [line.logger for line in errors] == ["vllm.v1.engine.core", "uvicorn.error"]
    assert "ValueError" in errors[0].message
    # the error was not fatal: the engine core lives on and B decodes
    assert not step.snapshot.engine_dead
    assert step_of(timeline, "core_alive").result == "scheduled B: 1 tokens"


def test_a_valid_keep_reset_over_http_is_200(timeline: Timeline) -> None:
    step = step_of(timeline, "http_keep")
    assert step.result == "HTTP 200 OK"
    assert step.snapshot.hash_map == ()
    assert step.snapshot.running == ("B",)
    assert step.snapshot.request("B").block_ids == (1, 2, 3, 4)
    assert [line.message for line in step.snapshot.logs][:2] == [
        "Resetting prefix cache...",
        "Successfully reset prefix cache",
    ]


def test_a_refused_reset_is_still_200(timeline: Timeline) -> None:
    step = step_of(timeline, "http_default")
    assert step.result == "HTTP 200 OK"
    assert any(line.level == "WARNING" for line in step.snapshot.logs)


@pytest.mark.parametrize(
    ("query", "status"),
    [
        (BOTH, 400),
        ("reset_running_requests=1&keep_running_requests=on", 400),
        ("keep_running_requests=maybe", 422),
        ("keep_running_requests=true", 200),
        ("reset_running_requests=true&keep_running_requests=false", 200),
    ],
)
def test_status_codes(query: str, status: int) -> None:
    engine = EngineCore(Scheduler(num_gpu_blocks=10, block_size=4))
    server = APIServer(EngineCoreClient(engine))
    assert server.handle(HTTPRequest("POST", "/reset_prefix_cache", query)).status_code == status


def test_unknown_route_is_404() -> None:
    engine = EngineCore(Scheduler(num_gpu_blocks=10, block_size=4))
    server = APIServer(EngineCoreClient(engine))
    assert server.handle(HTTPRequest("GET", "/reset_prefix_cache")).status_code == 404
