"""Record which lines of the engine's own source ran, so the code panel shows the truth.

Line events are normalised to whole statements (via ``ast``) and attributed to
the innermost enclosing ``def``. That makes the record the same on every
CPython version: 3.12 inlines comprehensions and reports some line events
differently from 3.11, but both run the same statements of the same functions.

The events come from ``sys.settrace`` on 3.11, and on 3.12+ (Pyodide's Python) from
``sys.monitoring``, switched on for the traced files' own code only: there
``settrace`` is emulated on top of it and costs about twice as much per line.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import CodeType, FrameType, FunctionType, ModuleType
from typing import Any

# A function sys.settrace calls (one of a frame's events: what traces its next ones).
TraceFunction = Callable[[FrameType, str, Any], Any]

# The whole repo-relative path is shown to the learner, e.g. "engine/vllm/block_pool.py".
_REPO_ROOT = Path(__file__).resolve().parents[3]


def source_file(module: ModuleType) -> str:
    """The name a module's source is shown under, repo-relative: "engine/vllm/block_pool.py"."""
    path = Path(str(module.__file__)).resolve()
    try:
        return path.relative_to(_REPO_ROOT).as_posix()
    except ValueError:  # installed as a wheel: keep the package-relative path
        return f"{module.__name__.replace('.', '/')}.py"


def package_modules(package: ModuleType) -> tuple[ModuleType, ...]:
    """Every module of ``package`` (an engine's model), imported: the modules whose lines
    the code panel may show, not the machinery that records them."""
    return tuple(
        importlib.import_module(f"{package.__name__}.{module.name}")
        for module in pkgutil.iter_modules(package.__path__)
    )


@dataclass(frozen=True)
class FunctionSpan:
    """Where one function's source sits in its file (1-based, inclusive)."""

    qualname: str
    def_line: int  # the `def` line itself
    start_line: int  # first decorator, or the def line
    end_line: int


@dataclass(frozen=True)
class FunctionTrace:
    """One function that ran during a step and the source lines it ran."""

    file: str
    qualname: str
    start_line: int
    end_line: int
    lines: tuple[int, ...]  # every physical line of every statement that ran
    last_line: int  # first line of the last statement that ran (the "current" one)


class SourceIndex:
    """Per file: each line's statement and enclosing function."""

    def __init__(self, module: ModuleType) -> None:
        path = Path(str(module.__file__)).resolve()
        self.module = module
        self.path = str(path)
        self.file = source_file(module)
        self.text = path.read_text(encoding="utf-8")
        tree = ast.parse(self.text)
        # line -> (statement start, statement end of the part that "runs" on that line)
        self.statement_of_line: dict[int, tuple[int, int]] = {}
        # line -> innermost enclosing function
        self.function_of_line: dict[int, FunctionSpan] = {}
        self._index(tree, prefix="")
        # line -> (its function, its statement's first line), for the lines a tracer counts
        # (not a module or class body, which runs at import time only)
        self.runs: dict[int, tuple[FunctionSpan, int]] = {
            line: (span, self.statement_of_line[line][0])
            for line, span in self.function_of_line.items()
            if line in self.statement_of_line
        }

    def _index(self, node: ast.AST, prefix: str) -> None:
        # Only statements hold statements and functions (a lambda is no `def`): the walk
        # skips every expression, most of the tree (in Pyodide, about a tenth of a second
        # of the app's start, whose first timeline is traced).
        for child in _statement_children(node):
            qualname_prefix = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualname = f"{prefix}{child.name}"
                if isinstance(child, ast.ClassDef):
                    qualname_prefix = f"{qualname}."
                else:
                    qualname_prefix = f"{qualname}.<locals>."
                    start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    assert child.end_lineno is not None
                    span = FunctionSpan(qualname, child.lineno, start, child.end_lineno)
                    for line in range(start, child.end_lineno + 1):
                        self.function_of_line[line] = span  # inner defs overwrite later
            if isinstance(child, ast.stmt):
                self._index_statement(child)
            self._index(child, qualname_prefix)

    def _index_statement(self, stmt: ast.stmt) -> None:
        end = stmt.end_lineno or stmt.lineno
        body = getattr(stmt, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            # A compound statement "runs" only its header (up to the end of its
            # test, iterable, signature...); its body has lines of its own.
            header_parts = [
                part
                for part in ast.iter_child_nodes(stmt)
                if not isinstance(part, ast.stmt | ast.excepthandler | ast.match_case)
            ]
            end = max([stmt.lineno] + [getattr(p, "end_lineno", None) or 0 for p in header_parts])
        for line in range(stmt.lineno, end + 1):
            self.statement_of_line[line] = (stmt.lineno, end)


# The fields of a node that hold statements, or what holds them (an `except` clause, a
# `case`): a statement's other fields are expressions.
_STATEMENT_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def _statement_children(node: ast.AST) -> Iterator[ast.AST]:
    """The node's children that are statements or hold them, in ast.iter_child_nodes's
    order."""
    for name in node._fields:
        if name in _STATEMENT_FIELDS:
            value = getattr(node, name, None)
            if isinstance(value, list):
                yield from (child for child in value if isinstance(child, ast.AST))


# The result of a step's events by (indexes, distinct events in first-seen order, in
# last-seen order): most steps of a timeline, and of the next edit's timeline, run the
# same lines in the same order, and grouping them is most of what tracing costs after
# the line events themselves. Cleared when it grows past the bound.
_RESULTS: dict[tuple[Any, ...], tuple[FunctionTrace, ...]] = {}
_RESULTS_BOUND = 4096
# Before that: the result of a step's events as they came (8 bytes each), by (indexes,
# events). Most steps run exactly the lines of an earlier step (229 of the large
# playground's 246, and all of the next edit's): found without the two walks above.
# Cleared when the events kept pass the bound.
_RAW_RESULTS: dict[tuple[tuple[int, ...], bytes], tuple[FunctionTrace, ...]] = {}
_RAW_EVENTS_BOUND = 1 << 18


@cache
def module_code(module: ModuleType) -> tuple[CodeType, ...]:
    """Every code object of the module's functions and methods, nested ones included
    (found once: a module's code does not change after its import)."""
    found: dict[CodeType, None] = {}

    def add(code: CodeType) -> None:
        if code.co_filename == module.__file__ and code not in found:
            found[code] = None
            for const in code.co_consts:
                if isinstance(const, CodeType):
                    add(const)

    def visit(namespace: dict[str, Any], seen: set[int]) -> None:
        for value in namespace.values():
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, staticmethod | classmethod):
                value = value.__func__
            if isinstance(value, property):
                for accessor in (value.fget, value.fset, value.fdel):
                    if isinstance(accessor, FunctionType):
                        add(accessor.__code__)
            elif isinstance(value, FunctionType):
                add(value.__code__)
                wrapped = getattr(value, "__wrapped__", None)
                if isinstance(wrapped, FunctionType):
                    add(wrapped.__code__)
            elif isinstance(value, type) and value.__module__ == module.__name__:
                visit(dict(vars(value)), seen)
                fields = getattr(value, "__dataclass_fields__", {})
                visit({name: f.default_factory for name, f in fields.items()}, seen)

    visit(dict(vars(module)), set())
    return tuple(found)


# A line event is one int, the line plus its file's number (its index's place in the
# tracer's indexes) times LINE_SPAN: a 10,000-block playground's traced build has about
# 300,000 of them, and an int is made, kept and told apart faster than a (path, line).
LINE_SPAN = 1 << 20


def line_bases(indexes: Iterable[SourceIndex]) -> dict[str, int]:
    """Each traced file's path -> what its line events add to the line (LINE_SPAN)."""
    return {index.path: number * LINE_SPAN for number, index in enumerate(indexes)}


def _call_tracer(
    indexes: Iterable[SourceIndex],
) -> tuple[Callable[[list[int]], None], TraceFunction]:
    """``sys.settrace``'s function for the traced files (a frame of one of them gets a
    local one that records its line events), and what points them at a step's list.
    Closures, not methods: they run on every call and line. Made once per set of files,
    not per step: each local one refers to itself, a cycle left to the collector."""
    nowhere: list[int] = []
    append = nowhere.append

    def point_at(events: list[int]) -> None:
        nonlocal append
        append = events.append

    def recorder(base: int) -> TraceFunction:
        def on_line(frame: FrameType, event: str, arg: object) -> TraceFunction:
            if event == "line":
                append(base + frame.f_lineno)
            return on_line

        return on_line

    find = {path: recorder(base) for path, base in line_bases(indexes).items()}.get

    def on_call(frame: FrameType, event: str, arg: object) -> TraceFunction | None:
        return find(frame.f_code.co_filename)  # None: a file not traced

    return point_at, on_call


class _SettraceLines:
    """Line events from ``sys.settrace``: for a frame of a traced file, every line."""

    def __init__(self) -> None:
        self._previous: Any = None
        # (the traced files' indexes, _call_tracer's two functions for them)
        self._made: (
            tuple[tuple[SourceIndex, ...], Callable[[list[int]], None], TraceFunction] | None
        ) = None

    @contextmanager
    def session(self, indexes: Iterable[SourceIndex]) -> Iterator[None]:
        yield  # nothing to switch on ahead

    def start(self, indexes: Iterable[SourceIndex], events: list[int]) -> None:
        indexes = tuple(indexes)
        if self._made is None or self._made[0] != indexes:  # (an index is equal to itself)
            self._made = (indexes, *_call_tracer(indexes))
        _, point_at, on_call = self._made
        point_at(events)
        self._previous = sys.gettrace()
        sys.settrace(on_call)

    def stop(self) -> None:
        sys.settrace(self._previous)

    @contextmanager
    def paused(self) -> Iterator[None]:
        tracer = sys.gettrace()
        sys.settrace(None)
        try:
            yield
        finally:
            sys.settrace(tracer)


class _MonitoredLines:
    """Line events from ``sys.monitoring`` (3.12+), for the traced files' code objects
    only. Switching a code object's events on or off re-instruments it, so a session
    (a whole traced build) switches them on once; between its steps a line event is
    recorded nowhere."""

    def __init__(self, monitoring: Any, tool: int) -> None:
        self._monitoring = monitoring
        self._tool = tool
        self._events: list[int] | None = None
        self._bases: dict[str, int] = {}
        self._sessions = 0
        self._code: list[CodeType] = []
        monitoring.register_callback(tool, monitoring.events.LINE, self._on_line)

    @contextmanager
    def session(self, indexes: Iterable[SourceIndex]) -> Iterator[None]:
        self._acquire(indexes)
        try:
            yield
        finally:
            self._release()

    def _acquire(self, indexes: Iterable[SourceIndex]) -> None:
        if self._sessions == 0:
            self._code = [code for index in indexes for code in module_code(index.module)]
            for code in self._code:
                self._monitoring.set_local_events(self._tool, code, self._monitoring.events.LINE)
        self._sessions += 1

    def _release(self) -> None:
        self._sessions -= 1
        if self._sessions == 0:
            for code in self._code:
                self._monitoring.set_local_events(self._tool, code, 0)

    def start(self, indexes: Iterable[SourceIndex], events: list[int]) -> None:
        self._acquire(indexes)
        self._bases = line_bases(indexes)
        self._events = events

    def stop(self) -> None:
        self._events = None
        self._release()

    @contextmanager
    def paused(self) -> Iterator[None]:
        events, self._events = self._events, None
        try:
            yield
        finally:
            self._events = events

    def _on_line(self, code: CodeType, line: int) -> None:
        if self._events is not None:
            self._events.append(self._bases[code.co_filename] + line)


def _line_source() -> _SettraceLines | _MonitoredLines:
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        # Not the profiler's or coverage's id: cProfile and coverage.py take theirs on 3.12+.
        for tool in (3, 4, monitoring.OPTIMIZER_ID):
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "prefix-cache-lab trace")
                return _MonitoredLines(monitoring, tool)
    return _SettraceLines()


LINES = _line_source()


def tracing(indexes: Iterable[SourceIndex]) -> Any:
    """Around a run of traced steps (build_timeline): line events on for all of them."""
    return LINES.session(indexes)


def untraced() -> Any:
    """Around code inside a traced step that is not the engine's (the step's recorder):
    its reads of engine properties are not shown as lines that ran."""
    return LINES.paused()


class Tracer:
    """Context manager recording the engine lines that run inside it.

    Use one per step; ``result()`` gives the functions in the order first entered.
    A line event only appends (file, line): the tracer runs on every line of
    every traced step, so the grouping waits for ``result()``, which sees each
    distinct line once, and only for a sequence of lines it has not grouped before.
    """

    def __init__(self, indexes: Iterable[SourceIndex]) -> None:
        self._indexes = tuple(indexes)
        self._events: list[int] = []  # (LINE_SPAN)

    def __enter__(self) -> Tracer:
        LINES.start(self._indexes, self._events)
        return self

    def __exit__(self, *exc: object) -> None:
        LINES.stop()

    def result(self) -> tuple[FunctionTrace, ...]:
        ids = tuple(map(id, self._indexes))
        raw = (ids, array("q", self._events).tobytes())
        traces = _RAW_RESULTS.get(raw)
        if traces is not None:
            return traces
        # Each distinct event once: in the order first seen (which function was entered
        # first), and in the order last seen (which statement of a function ran last).
        first_seen = tuple(dict.fromkeys(self._events))
        last_seen = tuple(reversed(dict.fromkeys(reversed(self._events))))
        key = (ids, first_seen, last_seen)
        traces = _RESULTS.get(key)
        if traces is None:
            if len(_RESULTS) >= _RESULTS_BOUND:
                _RESULTS.clear()
            traces = _RESULTS[key] = self._grouped(first_seen, last_seen)
        kept = sum(len(events) for _, events in _RAW_RESULTS) // 8
        if kept + len(self._events) > _RAW_EVENTS_BOUND:
            _RAW_RESULTS.clear()
        _RAW_RESULTS[raw] = traces
        return traces

    def _grouped(
        self, first_seen: tuple[int, ...], last_seen: tuple[int, ...]
    ) -> tuple[FunctionTrace, ...]:
        statements: dict[tuple[SourceIndex, FunctionSpan], set[int]] = {}
        for event in first_seen:
            index, line = self._indexes[event // LINE_SPAN], event % LINE_SPAN
            run = index.runs.get(line)
            if run is not None:
                statements.setdefault((index, run[0]), set()).add(run[1])
        last: dict[tuple[SourceIndex, FunctionSpan], int] = {}
        for event in last_seen:
            index, line = self._indexes[event // LINE_SPAN], event % LINE_SPAN
            run = index.runs.get(line)
            if run is not None:
                last[(index, run[0])] = run[1]
        traces = []
        for (index, span), starts in statements.items():
            lines: set[int] = set()
            for start in starts:
                lines.update(range(start, index.statement_of_line[start][1] + 1))
            traces.append(
                FunctionTrace(
                    file=index.file,
                    qualname=span.qualname,
                    start_line=span.start_line,
                    end_line=span.end_line,
                    lines=tuple(sorted(lines)),
                    last_line=last[(index, span)],
                )
            )
        return tuple(traces)
