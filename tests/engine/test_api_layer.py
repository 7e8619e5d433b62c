"""The API layer, as vLLM 0.33.0's server answers: status codes, JSON bodies and log lines."""

from __future__ import annotations

import json

import pytest

from engine.lab.play.scenario import load_scenario
from engine.lab.play.vllm.timeline import Step, Timeline, build_timeline
from engine.vllm.api_server import APIServer, HTTPRequest, HTTPResponse, KeepModeEngineCoreClient
from engine.vllm.core import KeepModeEngineCore
from engine.vllm.scheduler import KeepModeScheduler

BOTH = "reset_running_requests=true&keep_running_requests=true"
ROUTER = "vllm.entrypoints.serve.dev.cache.api_router"
HANDLER = "vllm.entrypoints.serve.exception_handling.handlers.exception"


@pytest.fixture(scope="module")
def timeline() -> Timeline:
    return build_timeline(load_scenario("api-layer"), "keep")


def step_of(timeline: Timeline, key: str) -> Step:
    return next(s for s in timeline.steps if s.narration_key == key)


def ran(step: Step) -> set[str]:
    return {trace.qualname for trace in step.code}


def body_of(step: Step) -> dict[str, dict[str, object]]:
    """The JSON body a step's result shows after the status line."""
    assert step.result is not None
    body: dict[str, dict[str, object]] = json.loads(step.result[step.result.index("{") :])
    return body


def server(dev_mode: bool = True) -> APIServer:
    engine = KeepModeEngineCore(KeepModeScheduler(num_gpu_blocks=10, block_size=4))
    return APIServer(KeepModeEngineCoreClient(engine), dev_mode=dev_mode)


def post(query: str, dev_mode: bool = True) -> HTTPResponse:
    return server(dev_mode).handle(HTTPRequest("POST", "/reset_prefix_cache", query))


def test_the_python_api_raises_value_error(timeline: Timeline) -> None:
    step = step_of(timeline, "python_api")
    assert step.result is not None and step.result.startswith("ValueError: ")
    assert "KeepModeScheduler.reset_prefix_cache" in ran(step)
    assert step.snapshot.hash_map == timeline.steps[0].snapshot.hash_map  # nothing changed


def test_http_answers_400_before_any_engine_call(timeline: Timeline) -> None:
    step = step_of(timeline, "http_400")
    assert step.label == f"POST /reset_prefix_cache?{BOTH}"
    assert step.result is not None and step.result.startswith("HTTP 400 Bad Request {")
    assert body_of(step) == {
        "error": {
            "message": "reset_running_requests and keep_running_requests cannot both be true",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    }
    names = ran(step)
    assert "reset_prefix_cache" in names  # the handler
    assert not any(name.startswith(("EngineCore", "Scheduler", "KeepMode")) for name in names)
    assert all(trace.file == "engine/vllm/api_server.py" for trace in step.code)
    assert step.focus is not None and step.focus.qualname == "reset_prefix_cache"
    assert [(line.level, line.logger, line.message) for line in step.snapshot.logs] == [
        ("ERROR", HANDLER, "Exception caught. Request id: None"),
        (
            "INFO",
            "uvicorn.access",
            f'127.0.0.1:52814 - "POST /reset_prefix_cache?{BOTH} HTTP/1.1" 400 Bad Request',
        ),
    ]


def test_without_the_check_the_engine_cores_value_error_is_a_json_500(timeline: Timeline) -> None:
    step = step_of(timeline, "http_500")
    assert step.label.endswith("(no flag check)")
    assert step.result is not None and step.result.startswith("HTTP 500 Internal Server Error {")
    assert body_of(step) == {
        "error": {
            "message": "Call to reset_prefix_cache method failed: "
            "reset_running_requests and keep_running_requests cannot both be True",
            "type": "InternalServerError",
            "param": None,
            "code": 500,
        }
    }
    names = ran(step)
    assert {"EngineCoreClient.call_utility", "KeepModeScheduler.reset_prefix_cache"} <= names
    logs = [(line.level, line.logger, line.message.split("\n")[0]) for line in step.snapshot.logs]
    assert logs == [
        ("INFO", ROUTER, "Resetting prefix cache..."),
        ("ERROR", "vllm.v1.engine.core", "Invocation of reset_prefix_cache method failed"),
        ("ERROR", HANDLER, "Exception caught. Request id: None"),
        ("INFO", "uvicorn.access", logs[3][2]),
        ("ERROR", "uvicorn.error", "Exception in ASGI application"),
    ]
    assert logs[3][2].endswith("500 Internal Server Error")
    # logger.exception: the traceback follows, ending in the exception itself
    core_error = step.snapshot.logs[1].message
    assert core_error.endswith(
        "\nValueError: reset_running_requests and keep_running_requests cannot both be True"
    )
    message = str(body_of(step)["error"]["message"])
    assert step.snapshot.logs[4].message.endswith("\nException: " + message)
    # the error was not fatal: the engine core lives on and B decodes
    assert not step.snapshot.engine_dead
    assert step_of(timeline, "core_alive").result == "scheduled B: 1 token"


def test_a_valid_keep_reset_over_http_answers_success_true(timeline: Timeline) -> None:
    step = step_of(timeline, "http_keep")
    assert step.result == 'HTTP 200 OK {"success": true}'
    assert step.snapshot.hash_map == ()
    assert step.snapshot.running == ("B",)
    assert step.snapshot.request("B").block_ids == (1, 2, 3, 4)
    assert [(line.logger, line.message) for line in step.snapshot.logs][:2] == [
        (ROUTER, "Resetting prefix cache..."),
        ("vllm.v1.core.block_pool", "Successfully reset prefix cache"),
    ]


def test_a_refused_reset_answers_success_false(timeline: Timeline) -> None:
    step = step_of(timeline, "http_default")
    assert step.result == 'HTTP 200 OK {"success": false}'
    assert any(line.level == "WARNING" for line in step.snapshot.logs)
    # keep mode's reset with its flag off: vLLM 0.33.0's guard, which refuses
    [pool] = [t for t in step.code if t.qualname == "KeepModeBlockPool.reset_prefix_cache"]
    source = timeline.source(pool.file).splitlines()
    assert source[pool.last_line - 1].strip() == "return False"


@pytest.mark.parametrize(
    ("query", "status"),
    [
        (BOTH, 400),
        ("reset_running_requests=1&keep_running_requests=on", 400),
        ("keep_running_requests=maybe", 400),
        ("reset_external=maybe", 400),
        ("keep_running_requests=true", 200),
        ("reset_running_requests=true&keep_running_requests=false", 200),
        ("reset_external=true", 200),
    ],
)
def test_status_codes(query: str, status: int) -> None:
    assert post(query).status_code == status


def test_a_value_that_is_not_a_boolean_is_a_400_validation_error() -> None:
    response = post("keep_running_requests=maybe")
    assert response.json() == {
        "error": {
            "message": "1 validation error:\n  {'type': 'bool_parsing', "
            "'loc': 'query.keep_running_requests', "
            "'msg': 'Input should be a valid boolean, unable to interpret input', "
            "'input': 'maybe'}",
            "type": "Bad Request",
            "param": "query.keep_running_requests",
            "code": 400,
        }
    }


def test_the_endpoint_exists_only_in_development_mode() -> None:
    assert post("", dev_mode=True).json() == {"success": True}
    response = post("", dev_mode=False)
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


def test_the_routers_logger_is_the_one_vllm_names(vllm_logs: pytest.LogCaptureFixture) -> None:
    post("")
    assert (ROUTER, "Resetting prefix cache...") in [(r.name, r.message) for r in vllm_logs.records]


def test_unknown_route_is_404() -> None:
    response = server().handle(HTTPRequest("GET", "/reset_prefix_cache"))
    assert response.status_code == 404
