"""The HTTP side of a reset: ``POST /reset_prefix_cache`` and the engine-core client.

In vLLM 0.33.0 the endpoint lives in ``vllm.entrypoints.serve.dev.cache.api_router``
and exists only when the server runs in development mode (``VLLM_SERVER_DEV_MODE=1``);
otherwise the route is not there at all (404). Its query parameters are
``reset_running_requests`` and ``reset_external``. It answers 200 with the JSON body
``{"success": <bool>}``: a refused reset says false, and the caller may retry.

``keep_running_requests`` is keep mode's flag: proposed, not in vLLM 0.33.0. Its
handlers here are keep mode's, and so is the client they call
(``KeepModeEngineCoreClient``); ``EngineCoreClient.reset_prefix_cache`` is vLLM
0.33.0's.

Errors, as vLLM's exception handlers turn them into answers (the body is vLLM's
``ErrorResponse``: ``{"error": {"message", "type", "param", "code"}}``):

- a query value that is not a boolean: 400, from the request-validation handler;
- a ValueError, TypeError or OverflowError raised in the API process: 400
  ``BadRequestError``;
- any other exception: a JSON 500 ``InternalServerError`` from the catch-all
  handler, carrying the message. The API server and the engine core run in
  different processes: a utility call that fails inside the engine core comes
  back as a failure *message*, which the client raises as a plain Exception. So
  the scheduler's ValueError for the flag combination would reach the caller as
  a 500: the proposed handler checks the combination itself, in the API
  process, before any engine call.

``reset_external`` reaches the scheduler as ``reset_connector``. Nothing reset
over HTTP here has a connector, and vLLM counts the connector reset as a success
when there is none (not modelled: the offload connector's own reset).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from engine.vllm.core import EngineCore
from engine.vllm.logger import init_logger

# The loggers of the modules that write these lines in vLLM 0.33.0.
logger = init_logger("vllm.entrypoints.serve.dev.cache.api_router")
exception_logger = init_logger("vllm.entrypoints.serve.exception_handling.handlers.exception")
validation_logger = init_logger("vllm.entrypoints.serve.exception_handling.handlers.validation")
# The HTTP server's own loggers, as uvicorn names them.
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

    def json(self) -> Any:
        return json.loads(self.body)


class RequestValidationError(ValueError):
    """Query parameters that do not parse (FastAPI's RequestValidationError)."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__(errors)
        self.errors = errors


def error_response(
    message: str, error_type: str, status_code: int, param: str | None = None
) -> HTTPResponse:
    """vLLM's ErrorResponse as JSON, with the same status code."""
    error = {"message": message, "type": error_type, "param": param, "code": status_code}
    return HTTPResponse(status_code, json.dumps({"error": error}))


_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off"}


def query_flags(request: HTTPRequest, *names: str) -> list[bool]:
    """Boolean query parameters (default False), parsed as FastAPI parses them."""
    values, errors = [], []
    for name in names:
        value = request.query_params.get(name)
        if value is None or value.lower() in _FALSE:
            values.append(False)
        elif value.lower() in _TRUE:
            values.append(True)
        else:
            errors.append(
                {
                    "type": "bool_parsing",
                    "loc": f"query.{name}",
                    "msg": "Input should be a valid boolean, unable to interpret input",
                    "input": value,
                }
            )
    if errors:
        raise RequestValidationError(errors)
    return values


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
        self, reset_running_requests: bool = False, reset_connector: bool = False
    ) -> bool:
        result: bool = self.call_utility(
            "reset_prefix_cache", reset_running_requests, reset_connector
        )
        return result


class KeepModeEngineCoreClient(EngineCoreClient):
    """vLLM 0.33.0's client with keep mode's flag on its reset: the change
    proposed in the write-up, not in vLLM 0.33.0."""

    def reset_prefix_cache(
        self,
        reset_running_requests: bool = False,
        reset_connector: bool = False,
        keep_running_requests: bool = False,
    ) -> bool:
        result: bool = self.call_utility(
            "reset_prefix_cache", reset_running_requests, reset_connector, keep_running_requests
        )
        return result


def reset_prefix_cache(
    raw_request: HTTPRequest, engine_client: KeepModeEngineCoreClient
) -> HTTPResponse:
    """``POST /reset_prefix_cache``, with keep mode's flag (proposed, not in vLLM 0.33.0).

    Answers ``{"success": <bool>}``: false when the pool refused the reset.
    """
    reset_running_requests, reset_external, keep_running_requests = query_flags(
        raw_request, "reset_running_requests", "reset_external", "keep_running_requests"
    )
    if reset_running_requests and keep_running_requests:
        # In the API process, so it is a 400: from the engine core it would be a 500.
        raise ValueError("reset_running_requests and keep_running_requests cannot both be true")
    logger.info("Resetting prefix cache...")
    success = engine_client.reset_prefix_cache(
        reset_running_requests, reset_external, keep_running_requests
    )
    return HTTPResponse(HTTPStatus.OK, json.dumps({"success": bool(success)}))


def reset_prefix_cache_without_flag_check(
    raw_request: HTTPRequest, engine_client: KeepModeEngineCoreClient
) -> HTTPResponse:
    """``POST /reset_prefix_cache``, with keep mode's flag (proposed, not in vLLM 0.33.0).

    Answers ``{"success": <bool>}``: false when the pool refused the reset.
    """
    reset_running_requests, reset_external, keep_running_requests = query_flags(
        raw_request, "reset_running_requests", "reset_external", "keep_running_requests"
    )
    logger.info("Resetting prefix cache...")
    success = engine_client.reset_prefix_cache(
        reset_running_requests, reset_external, keep_running_requests
    )
    return HTTPResponse(HTTPStatus.OK, json.dumps({"success": bool(success)}))


Handler = Callable[[HTTPRequest, KeepModeEngineCoreClient], HTTPResponse]


class APIServer:
    """Routing, vLLM's exception handlers and the server's access log.

    ``dev_mode`` is ``VLLM_SERVER_DEV_MODE``: without it there is no reset endpoint.
    In development mode ``--log-error-stack`` defaults to on, so the exception
    handlers log each error they answer.
    """

    def __init__(
        self,
        engine_client: KeepModeEngineCoreClient,
        dev_mode: bool = False,
        check_reset_flags: bool = True,
    ) -> None:
        self.engine_client = engine_client
        self.log_error_stack = dev_mode
        self.routes: dict[tuple[str, str], Handler] = {}
        if dev_mode:
            self.routes["POST", "/reset_prefix_cache"] = (
                reset_prefix_cache if check_reset_flags else reset_prefix_cache_without_flag_check
            )

    def handle(self, request: HTTPRequest) -> HTTPResponse:
        handler = self.routes.get((request.method, request.path))
        unhandled: Exception | None = None
        if handler is None:
            response = HTTPResponse(HTTPStatus.NOT_FOUND, json.dumps({"detail": "Not Found"}))
        else:
            try:
                response = handler(request, self.engine_client)
            except RequestValidationError as error:
                response = self._validation_error(error)
            except (ValueError, TypeError, OverflowError) as error:
                response = self._exception(error, "BadRequestError", HTTPStatus.BAD_REQUEST)
            except Exception as error:
                # The catch-all handler answers; the server still sees the exception.
                response = self._exception(
                    error, "InternalServerError", HTTPStatus.INTERNAL_SERVER_ERROR
                )
                unhandled = error
        target = request.path + (f"?{request.query_string}" if request.query_string else "")
        access_logger.info(
            '%s - "%s %s HTTP/1.1" %d %s',
            CLIENT_ADDRESS,
            request.method,
            target,
            response.status_code,
            response.reason,
        )
        if unhandled is not None:
            error_logger.error("Exception in ASGI application\n", exc_info=unhandled)
        return response

    def _exception(self, error: Exception, error_type: str, status: HTTPStatus) -> HTTPResponse:
        if self.log_error_stack:
            exception_logger.error("Exception caught. Request id: %s", None)
        return error_response(str(error), error_type, status)

    def _validation_error(self, error: RequestValidationError) -> HTTPResponse:
        if self.log_error_stack:
            # logger.exception in vLLM: the traceback follows the line.
            validation_logger.error(
                "RequestValidationError caught. Request id: %s", None, exc_info=error
            )
        count = len(error.errors)
        message = f"{count} validation {'error' if count == 1 else 'errors'}:\n" + "\n".join(
            f"  {e}" for e in error.errors
        )
        return error_response(
            message, HTTPStatus.BAD_REQUEST.phrase, HTTPStatus.BAD_REQUEST, error.errors[0]["loc"]
        )
