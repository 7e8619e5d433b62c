"""The HTTP side of a reset: ``POST /reset_prefix_cache`` and the engine-core client.

In a vLLM server the API server and the engine core run in different processes.
The handler reads the flags from the query string and asks the engine core,
through a client, to reset. A utility call that fails inside the engine core
comes back as a failure *message*: the client raises a plain ``Exception`` with
it, the handler does not catch that, and the server answers 500. So a
ValueError for a bad flag combination, raised by the scheduler, would reach
the caller as "Internal Server Error". That is why the handler checks the
combination itself and answers 400 before making any engine call.

``reset_prefix_cache_without_flag_check`` is the handler without that check.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from engine.core import EngineCore
from engine.logger import init_logger

logger = init_logger("vllm.entrypoints.openai.api_server")
# The server's own loggers, as uvicorn names them.
access_logger = logging.getLogger("uvicorn.access")
error_logger = logging.getLogger("uvicorn.error")

CLIENT_ADDRESS = "127.0.0.1:52814"


@dataclass(frozen=True)
class HTTPRequest:
    method: str
    path: str
    query_string: str = ""

    @property
    def query_params(self) -> dict[str, str]:
        """The last value of each parameter, as FastAPI reads a single-valued query."""
        return {k: v[-1] for k, v in parse_qs(self.query_string, keep_blank_values=True).items()}


@dataclass(frozen=True)
class HTTPResponse:
    status_code: int
    body: str = ""

    @property
    def reason(self) -> str:
        return HTTPStatus(self.status_code).phrase


class RequestValidationError(ValueError):
    """A query parameter that does not parse (FastAPI answers 422)."""


def create_error_response(message: str, status_code: int) -> HTTPResponse:
    """An error body in the shape vLLM's OpenAI-compatible server uses."""
    error = {
        "message": message,
        "type": HTTPStatus(status_code).phrase.replace(" ", "") + "Error",
        "param": None,
        "code": status_code,
    }
    return HTTPResponse(status_code, json.dumps({"error": error}))


_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off"}


def query_flag(request: HTTPRequest, name: str) -> bool:
    """A boolean query parameter, default False, parsed as FastAPI parses one."""
    value = request.query_params.get(name)
    if value is None:
        return False
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise RequestValidationError(f"query parameter {name}: {value!r} is not a valid boolean")


class EngineCoreClient:
    """The API server's handle on the engine core in another process (vLLM's MPClient)."""

    def __init__(self, engine_core: EngineCore) -> None:
        self._engine_core = engine_core

    def call_utility(self, method: str, *args: Any) -> Any:
        # Only the method name and the arguments cross the boundary, and only a
        # result or a failure message comes back.
        output = self._engine_core.handle_utility_call(method, args)
        if output.failure_message is not None:
            raise Exception(output.failure_message)
        return output.result

    def reset_prefix_cache(
        self, reset_running_requests: bool = False, keep_running_requests: bool = False
    ) -> bool:
        result: bool = self.call_utility(
            "reset_prefix_cache", reset_running_requests, keep_running_requests
        )
        return result


def reset_prefix_cache(raw_request: HTTPRequest, engine_client: EngineCoreClient) -> HTTPResponse:
    """``POST /reset_prefix_cache?reset_running_requests=...&keep_running_requests=...``

    As in vLLM, the answer is 200 whether or not the reset succeeded; the
    engine's log says which.
    """
    reset_running_requests = query_flag(raw_request, "reset_running_requests")
    keep_running_requests = query_flag(raw_request, "keep_running_requests")
    if reset_running_requests and keep_running_requests:
        # Checked here: the same ValueError from the engine core would be a 500.
        return create_error_response(
            "reset_running_requests and keep_running_requests cannot both be true",
            HTTPStatus.BAD_REQUEST,
        )
    logger.info("Resetting prefix cache...")
    engine_client.reset_prefix_cache(reset_running_requests, keep_running_requests)
    return HTTPResponse(HTTPStatus.OK)


def reset_prefix_cache_without_flag_check(
    raw_request: HTTPRequest, engine_client: EngineCoreClient
) -> HTTPResponse:
    """The same endpoint without the flag check: the combination reaches the engine core."""
    reset_running_requests = query_flag(raw_request, "reset_running_requests")
    keep_running_requests = query_flag(raw_request, "keep_running_requests")
    logger.info("Resetting prefix cache...")
    engine_client.reset_prefix_cache(reset_running_requests, keep_running_requests)
    return HTTPResponse(HTTPStatus.OK)


Handler = Callable[[HTTPRequest, EngineCoreClient], HTTPResponse]


class APIServer:
    """Routing, the server's last-resort error handling and its access log."""

    def __init__(self, engine_client: EngineCoreClient, check_reset_flags: bool = True) -> None:
        self.engine_client = engine_client
        self.routes: dict[tuple[str, str], Handler] = {
            ("POST", "/reset_prefix_cache"): reset_prefix_cache
            if check_reset_flags
            else reset_prefix_cache_without_flag_check,
        }

    def handle(self, request: HTTPRequest) -> HTTPResponse:
        handler = self.routes.get((request.method, request.path))
        if handler is None:
            response = HTTPResponse(HTTPStatus.NOT_FOUND, json.dumps({"detail": "Not Found"}))
        else:
            try:
                response = handler(request, self.engine_client)
            except RequestValidationError as error:
                response = HTTPResponse(
                    HTTPStatus.UNPROCESSABLE_ENTITY, json.dumps({"detail": str(error)})
                )
            except Exception as error:
                # Nothing handled it: whatever it was, the caller gets a 500.
                error_logger.error("Exception in ASGI application: %s", error)
                response = HTTPResponse(HTTPStatus.INTERNAL_SERVER_ERROR, "Internal Server Error")
        target = request.path + (f"?{request.query_string}" if request.query_string else "")
        access_logger.info(
            '%s - "%s %s HTTP/1.1" %d %s',
            CLIENT_ADDRESS,
            request.method,
            target,
            response.status_code,
            response.reason,
        )
        return response
