"""Scenarios: a pool, a setup and a script of actions, read from ``content/scenarios/*.toml``.

A scenario is data, checked here once, so that a bad one is refused with a
one-line message naming the problem instead of failing halfway through a run.
"""

from __future__ import annotations

import copy
import dataclasses
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal, get_args

from engine.lab.play.request_extras import (
    ExtrasError,
    TokenRun,
    parse_mm_items,
    parse_prompt_embeds,
)
from engine.lab.shared.quoting import shorten_quotes
from engine.lab.shared.tokenizer import tokenize
from engine.sglang.schedule_policy import CLIP_MAX_NEW_TOKENS, fits_an_empty_pool
from engine.vllm.kv_cache_manager import cdiv

# preempt and keep set the reset's flags; first-chunk turns off the admission
# check (scheduler_reserve_full_isl), so a waiting request needs room only for its
# first chunk.
Mode = Literal["default", "preempt", "keep", "first-chunk"]
MODES: tuple[Mode, ...] = get_args(Mode)
ActionKind = Literal[
    "add_request", "step", "run_until_idle", "reset_prefix_cache", "abort", "http_reset"
]
ACTION_KINDS: tuple[ActionKind, ...] = get_args(ActionKind)
# The fields each action reads besides ``do``, ``say`` and ``focus``: any other is
# refused, so a flag an action would ignore never passes silently.
ACTION_FIELDS: dict[str, tuple[str, ...]] = {
    "add_request": (
        "id",
        "prompt",
        "prompt_text",
        "max_tokens",
        "cache_salt",
        "lora_name",
        "prompt_logprobs",
        "mm_items",
        "prompt_embeds",
    ),
    "step": ("count",),
    "run_until_idle": (),
    "reset_prefix_cache": ("reset_running_requests", "keep_running_requests"),
    "abort": ("id",),
    "http_reset": ("query", "check_flags"),
}
_KIND_WORDS = {str: "text", int: "a whole number", bool: "true or false"}

# A prompt longer than this is refused: the page would have to draw it.
MAX_PROMPT_TOKENS = 100_000
MAX_POOL_BLOCKS = 100_000
# One `step` action may stand for this many engine steps (`count = N`).
MAX_STEP_COUNT = 2_000
# The scheduler's budgets where a scenario or workload sets none: vLLM's `LLM` class
# on a GPU under 70 GB (EngineArgs' defaults in 0.33.0). The Scheduler's own
# defaults are SchedulerConfig's, 2,048 tokens and 128 requests.
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8_192
DEFAULT_MAX_NUM_SEQS = 256


class ScenarioError(ValueError):
    """A scenario, mode or parameter that cannot be played; the message says why (what it
    quotes, at most ~80 characters of: engine/lab/shared/quoting.py)."""

    def __init__(self, message: str = "") -> None:
        super().__init__(shorten_quotes(message))


# The engines a scenario may be played on: vLLM 0.33.0's model (engine/vllm/) and
# SGLang 0.5.23's (engine/sglang/). A scenario file lists its own (``engines``);
# without the list it plays on vLLM only.
ENGINES = ("vllm", "sglang")
# SGLang's modes are its two schedule policies: ``fcfs`` (SGLang's default) and ``lpm``.
SGLANG_MODES = ("fcfs", "lpm")
SGLANG_EVICTION_POLICIES = ("lru", "lfu", "fifo", "mru", "filo", "priority", "slru")
# SGLang's defaults (engine/sglang, docs/sglang.md): page size 1, lru eviction.
SGLANG_DEFAULT_PAGE_SIZE = 1
SGLANG_DEFAULT_EVICTION_POLICY = "lru"
# What an action may use on SGLang: vLLM-only fields and actions are refused there.
SGLANG_ACTIONS = ("add_request", "step", "run_until_idle", "reset_prefix_cache")
# (a LoRA adapter is: its id joins the request's extra_key, engine/sglang/lora_registry.py)
SGLANG_REQUEST_FIELDS_NOT_MODELLED = ("prompt_logprobs", "prompt_embeds")


@dataclass(frozen=True)
class SGLangOptions:
    """The ``[sglang]`` table: how the scenario plays on SGLang's model.

    ``num_slots`` None: as many KV slots as vLLM's pool has usable tokens
    (``(num_gpu_blocks - 1) * block_size``, the null block left out), so both
    engines feel the same pressure. ``narration`` is keyed like the scenario's own
    (shared texts under "", per-mode tables under the mode's name)."""

    modes: tuple[str, ...] = ("fcfs",)
    page_size: int = SGLANG_DEFAULT_PAGE_SIZE
    num_slots: int | None = None
    eviction_policy: str = SGLANG_DEFAULT_EVICTION_POLICY
    narration: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)

    def narration_for(self, mode: str) -> dict[str, str]:
        return {**self.narration.get("", {}), **self.narration.get(mode, {})}


@dataclass(frozen=True)
class RequestSpec:
    request_id: str
    prompt_token_ids: tuple[int, ...]
    max_tokens: int = 1
    cache_salt: str | None = None
    lora_name: str | None = None
    prompt_logprobs: int | None = None
    # Multimodal items (sorted by offset) and a run of tokens given as embeddings.
    mm_items: tuple[TokenRun, ...] = ()
    prompt_embeds: TokenRun | None = None


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    say: str  # narration key
    request: RequestSpec | None = None  # add_request
    request_id: str | None = None  # abort
    count: int = 1  # step: how many engine steps the action takes
    # reset_prefix_cache: None means "as the chosen mode says"
    reset_running_requests: bool | None = None
    keep_running_requests: bool | None = None
    # http_reset: the query string, and whether the handler checks the flags
    query: str | None = None
    check_flags: bool = True
    # the function the code panel should open on, if it runs (e.g. "Scheduler.schedule")
    focus: str | None = None

    def label(self, mode: Mode) -> str:
        """How the action reads in a log or a step list."""
        if self.kind == "add_request":
            assert self.request is not None
            num_tokens = len(self.request.prompt_token_ids)
            return f"add_request({self.request.request_id!r}, {num_tokens} tokens)"
        if self.kind == "abort":
            return f"abort({self.request_id!r})"
        if self.kind == "run_until_idle":
            return "step() until idle"
        if self.kind == "reset_prefix_cache":
            flags = reset_flags(self, mode)
            args = ", ".join(f"{name}=True" for name, on in flags.items() if on)
            return f"reset_prefix_cache({args})"
        if self.kind == "http_reset":
            target = "/reset_prefix_cache" + (f"?{self.query}" if self.query else "")
            return f"POST {target}" + ("" if self.check_flags else " (no flag check)")
        return "step()"


def reset_flags(action: Action, mode: Mode) -> dict[str, bool]:
    """The reset's keyword arguments: the scenario's own, or the learner's mode."""
    return {
        "reset_running_requests": action.reset_running_requests
        if action.reset_running_requests is not None
        else mode == "preempt",
        "keep_running_requests": action.keep_running_requests
        if action.keep_running_requests is not None
        else mode == "keep",
    }


def runs_keep_mode(scenario: Scenario, mode: Mode) -> bool:
    """Whether a play runs keep mode's proposed build of the engine (not in vLLM 0.33.0):
    when one of its resets keeps running requests, or it resets over HTTP (the endpoint's
    handlers here are keep mode's). Otherwise it runs vLLM 0.33.0's reset, as released."""
    actions = (*scenario.setup, *scenario.script)
    return any(action.kind == "http_reset" for action in actions) or any(
        reset_flags(action, mode)["keep_running_requests"]
        for action in actions
        if action.kind == "reset_prefix_cache"
    )


def reserve_full_isl(scenario: Scenario, mode: Mode) -> bool:
    """Whether admission needs room for the whole sequence: the scenario's
    ``[pool]`` setting, unless the learner's mode checks only the first chunk."""
    return scenario.scheduler_reserve_full_isl and mode != "first-chunk"


def mode_effect(scenario: Scenario, mode: Mode) -> tuple[bool, tuple[tuple[bool, ...], ...]]:
    """All that ``mode`` changes in a play of ``scenario``: the admission check and each
    reset's flags. Modes with the same effect play the same engine steps; their
    timelines differ only in how actions read and in narration."""
    resets = tuple(
        tuple(reset_flags(action, mode).values())
        for action in (*scenario.setup, *scenario.script)
        if action.kind == "reset_prefix_cache"
    )
    return reserve_full_isl(scenario, mode), resets


@dataclass(frozen=True)
class EngineOptions:
    """The ``[engine]`` table: which connectors run, and with or without keep mode's fixes."""

    offload: bool = False  # CPU offload of computed blocks (simple_kv_offload)
    num_cpu_blocks: int = 8
    aux_output: bool = False  # auxiliary outputs with async scheduling
    keep_mode_fixes: bool = True  # False: the code before keep mode's two fixes


# option -> "bool" or "int" (the annotations are strings here)
ENGINE_OPTION_TYPES: dict[str, str] = {
    f.name: str(f.type) for f in dataclasses.fields(EngineOptions)
}


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    summary: str
    order: int  # place in the scenario list
    modes: tuple[Mode, ...]
    num_gpu_blocks: int
    block_size: int
    max_num_batched_tokens: int
    setup: tuple[Action, ...]
    script: tuple[Action, ...]
    # narration[mode or ""][key] -> text; "" holds the texts shared by all modes
    narration: Mapping[str, Mapping[str, str]]
    engine: EngineOptions = EngineOptions()
    # vLLM's SchedulerConfig defaults: admit a waiting request only when its
    # whole sequence fits, and keep no watermark free.
    scheduler_reserve_full_isl: bool = True
    watermark: float = 0.0
    # the engines it plays on (ENGINES), and how it plays on SGLang
    engines: tuple[str, ...] = ("vllm",)
    sglang: SGLangOptions = SGLangOptions()

    def sglang_slots(self) -> int:
        """The SGLang pool's KV slots (``[sglang] num_slots``, else vLLM's usable tokens)."""
        if self.sglang.num_slots is not None:
            return self.sglang.num_slots
        return (self.num_gpu_blocks - 1) * self.block_size

    def narration_for(self, mode: Mode) -> dict[str, str]:
        return {**self.narration.get("", {}), **self.narration.get(mode, {})}

    def with_pool(
        self, num_gpu_blocks: int | None = None, block_size: int | None = None
    ) -> Scenario:
        """The same scenario on another pool, checked again."""
        changed = dataclasses.replace(
            self,
            num_gpu_blocks=self.num_gpu_blocks if num_gpu_blocks is None else num_gpu_blocks,
            block_size=self.block_size if block_size is None else block_size,
        )
        validate(changed)
        return changed


def parse_tokens(spec: Any, where: str) -> tuple[int, ...]:
    """Token ids from ``[1, 2, 3]``, ``"1..4"``, ``"1..12, 40, 41"`` or a list mixing them."""
    parts: list[Any] = []
    for part in spec if isinstance(spec, list) else [spec]:
        # "1..12, 40" is two parts; "40" alone is a token id
        if not isinstance(part, str):
            parts.append(part)
            continue
        pieces = [piece.strip() for piece in part.split(",")]
        parts += [int(p) if p.isascii() and p.isdigit() and len(p) < 10 else p for p in pieces]
    tokens: list[int] = []
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            tokens.append(part)
        elif isinstance(part, str) and ".." in part:
            first, _, last = part.partition("..")
            try:
                lo, hi = int(first), int(last)
            except ValueError:
                raise ScenarioError(f"{where}: {part!r} is not a range like '1..16'") from None
            if hi < lo or hi - lo >= MAX_PROMPT_TOKENS:
                raise ScenarioError(f"{where}: range {part!r} is empty or too long")
            tokens.extend(range(lo, hi + 1))
        else:
            raise ScenarioError(f"{where}: {part!r} is not a token id or a range like '1..16'")
    if not tokens:
        raise ScenarioError(f"{where}: the prompt is empty")
    if len(tokens) > MAX_PROMPT_TOKENS:
        raise ScenarioError(f"{where}: {len(tokens)} tokens is more than {MAX_PROMPT_TOKENS}")
    return tuple(tokens)


def _optional(raw: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = raw.get(key)
    if value is not None and (
        not isinstance(value, kind) or isinstance(value, bool) != (kind is bool)
    ):
        words = _KIND_WORDS.get(kind, kind.__name__)
        raise ScenarioError(f"{where}: {key} must be {words}")
    return value


def parse_action(raw: Mapping[str, Any], where: str) -> Action:
    action = _parse_action(raw, where)
    focus = _optional(raw, "focus", str, where)
    return dataclasses.replace(action, focus=focus) if focus else action


def _parse_action(raw: Mapping[str, Any], where: str) -> Action:
    kind = raw.get("do")
    if kind not in ACTION_KINDS:
        raise ScenarioError(f"{where}: unknown action {kind!r} (one of {', '.join(ACTION_KINDS)})")
    say = str(raw.get("say", kind))
    fields = ACTION_FIELDS[kind]
    for key in raw:
        if key not in ("do", "say", "focus", *fields):
            takes = f"it takes {', '.join(fields)}" if fields else "it takes none"
            raise ScenarioError(f"{where}: {kind} does not use {key} ({takes})")
    if kind == "add_request":
        request_id = raw.get("id")
        if not isinstance(request_id, str) or not request_id:
            raise ScenarioError(f"{where}: add_request needs an id")
        max_tokens = raw.get("max_tokens", 1)
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ScenarioError(f"{where}: max_tokens of {request_id!r} must be at least 1")
        prompt = _prompt_tokens(raw, f"{where} ({request_id})")
        try:
            mm_items = parse_mm_items(raw.get("mm_items"), len(prompt), f"{where} ({request_id})")
            embeds = parse_prompt_embeds(
                raw.get("prompt_embeds"), len(prompt), f"{where} ({request_id})"
            )
        except ExtrasError as error:
            raise ScenarioError(str(error)) from None
        spec = RequestSpec(
            request_id=request_id,
            prompt_token_ids=prompt,
            max_tokens=max_tokens,
            cache_salt=_optional(raw, "cache_salt", str, where),
            lora_name=_optional(raw, "lora_name", str, where),
            prompt_logprobs=_optional(raw, "prompt_logprobs", int, where),
            mm_items=mm_items,
            prompt_embeds=embeds,
        )
        return Action(kind, say, request=spec)
    if kind == "abort":
        request_id = raw.get("id")
        if not isinstance(request_id, str):
            raise ScenarioError(f"{where}: abort needs an id")
        return Action(kind, say, request_id=request_id)
    if kind == "http_reset":
        query = raw.get("query", "")
        if not isinstance(query, str):
            raise ScenarioError(
                f"{where}: query must be a string like 'keep_running_requests=true'"
            )
        check_flags = raw.get("check_flags", True)
        if not isinstance(check_flags, bool):
            raise ScenarioError(f"{where}: check_flags must be true or false")
        return Action(kind, say, query=query, check_flags=check_flags)
    if kind == "reset_prefix_cache":
        return Action(
            kind,
            say,
            reset_running_requests=_optional(raw, "reset_running_requests", bool, where),
            keep_running_requests=_optional(raw, "keep_running_requests", bool, where),
        )
    if kind == "step":
        count = raw.get("count", 1)
        if (
            not isinstance(count, int)
            or isinstance(count, bool)
            or not 1 <= count <= MAX_STEP_COUNT
        ):
            raise ScenarioError(
                f"{where}: count must be a whole number from 1 to {MAX_STEP_COUNT}, not {count!r}"
            )
        return Action(kind, say, count=count)
    return Action(kind, say)


def _prompt_tokens(raw: Mapping[str, Any], where: str) -> tuple[int, ...]:
    """``prompt`` (token ids and ranges) or ``prompt_text`` (see engine/lab/shared/tokenizer.py)."""
    if "prompt_text" not in raw:
        return parse_tokens(raw.get("prompt"), where)
    text = raw["prompt_text"]
    if "prompt" in raw:
        raise ScenarioError(f"{where}: give prompt or prompt_text, not both")
    if not isinstance(text, str):
        raise ScenarioError(f"{where}: prompt_text must be a string")
    tokens = tokenize(text)
    if not tokens:
        raise ScenarioError(f"{where}: prompt_text has no words, so the prompt is empty")
    if len(tokens) > MAX_PROMPT_TOKENS:
        raise ScenarioError(f"{where}: {len(tokens)} tokens is more than {MAX_PROMPT_TOKENS}")
    return tokens


def _positive_int(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ScenarioError(f"{key} must be a whole number, not {value!r}")
    return value


def _pool_bool(pool: Mapping[str, Any], key: str, default: bool) -> bool:
    value = pool.get(key, default)
    if not isinstance(value, bool):
        raise ScenarioError(f"[pool]: {key} must be true or false, not {value!r}")
    return value


def _pool_number(pool: Mapping[str, Any], key: str, default: float) -> float:
    value = pool.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ScenarioError(f"[pool]: {key} must be a number, not {value!r}")
    return float(value)


def parse_engine_options(raw: Any) -> EngineOptions:
    if not isinstance(raw, Mapping):
        raise ScenarioError("[engine] must be a table")
    for key, value in raw.items():
        kind = ENGINE_OPTION_TYPES.get(key)
        if kind is None:
            known = ", ".join(ENGINE_OPTION_TYPES)
            raise ScenarioError(f"[engine]: unknown option {key!r} (one of {known})")
        if kind == "bool" and not isinstance(value, bool):
            raise ScenarioError(f"[engine]: {key} must be true or false, not {value!r}")
        if kind == "int" and (not isinstance(value, int) or isinstance(value, bool)):
            raise ScenarioError(f"[engine]: {key} must be a whole number, not {value!r}")
    return EngineOptions(**raw)


# Names an action by its part ("setup" or "steps") and index in it, for messages: a
# file's actions by their table ("reset steps #3"), the playground's by their line.
ActionPlace = Callable[[str, int], str]


def parse_scenario(
    name: str, data: Mapping[str, Any], where: ActionPlace | None = None
) -> Scenario:
    place = where or (lambda part, i: f"{name} {part} #{i + 1}")
    pool = data.get("pool", {})
    modes = tuple(data.get("modes", ["default"]))
    for mode in modes:
        if mode not in MODES:
            raise ScenarioError(f"scenario {name!r}: unknown mode {mode!r}")
    actions = {
        part: tuple(parse_action(raw, place(part, i)) for i, raw in enumerate(data.get(part, [])))
        for part in ("setup", "steps")
    }
    narration_raw = data.get("narration", {})
    shared = {k: v for k, v in narration_raw.items() if isinstance(v, str)}
    per_mode = {k: dict(v) for k, v in narration_raw.items() if isinstance(v, dict)}
    scenario = Scenario(
        name=name,
        title=str(data.get("title", name)),
        summary=str(data.get("summary", "")).strip(),
        order=_positive_int(data, "order", 100),
        modes=modes,  # checked above
        num_gpu_blocks=_positive_int(pool, "num_gpu_blocks", 10),
        block_size=_positive_int(pool, "block_size", 4),
        max_num_batched_tokens=_positive_int(
            pool, "max_num_batched_tokens", DEFAULT_MAX_NUM_BATCHED_TOKENS
        ),
        scheduler_reserve_full_isl=_pool_bool(pool, "scheduler_reserve_full_isl", True),
        watermark=_pool_number(pool, "watermark", 0.0),
        setup=actions["setup"],
        script=actions["steps"],
        narration={"": shared, **per_mode},
        engine=parse_engine_options(data.get("engine", {})),
        engines=_parse_engines(data.get("engines", ["vllm"]), name),
        sglang=parse_sglang_options(data.get("sglang", {})),
    )
    validate(scenario, place)
    if "sglang" in scenario.engines:
        validate_sglang(scenario, place)
    return scenario


def _names_among(raw: Any, known: tuple[str, ...]) -> bool:
    """Whether ``raw`` is a list, not empty, of names each one of ``known``."""
    return (
        isinstance(raw, list) and bool(raw) and all(isinstance(n, str) and n in known for n in raw)
    )


def _parse_engines(raw: Any, name: str) -> tuple[str, ...]:
    if not _names_among(raw, ENGINES):
        raise ScenarioError(
            f"scenario {name!r}: engines must be a list of {', '.join(ENGINES)}, not {raw!r}"
        )
    return tuple(dict.fromkeys(raw))


def _narration_tables(raw: Any, where: str) -> dict[str, dict[str, str]]:
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{where} must be a table")
    for key, value in raw.items():
        texts = value if isinstance(value, Mapping) else {key: value}
        if not all(isinstance(text, str) for text in texts.values()):
            raise ScenarioError(f"{where}.{key} must be text or a table of texts")
    shared = {k: v for k, v in raw.items() if isinstance(v, str)}
    per_mode = {k: dict(v) for k, v in raw.items() if isinstance(v, Mapping)}
    return {"": shared, **per_mode}


def parse_sglang_options(raw: Any) -> SGLangOptions:
    """The ``[sglang]`` table, checked: modes, page_size, num_slots, eviction_policy,
    narration."""
    if not isinstance(raw, Mapping):
        raise ScenarioError("[sglang] must be a table")
    known = ("modes", "page_size", "num_slots", "eviction_policy", "narration")
    for key in raw:
        if key not in known:
            raise ScenarioError(f"[sglang]: unknown option {key!r} (one of {', '.join(known)})")
    modes = raw.get("modes", ["fcfs"])
    if not _names_among(modes, SGLANG_MODES):
        raise ScenarioError(
            f"[sglang]: modes must be a list of schedule policies "
            f"({', '.join(SGLANG_MODES)}), not {modes!r}"
        )
    page_size = _positive_int(raw, "page_size", SGLANG_DEFAULT_PAGE_SIZE)
    num_slots = raw.get("num_slots")
    if num_slots is not None:
        num_slots = _positive_int(raw, "num_slots", 0)
    policy = raw.get("eviction_policy", SGLANG_DEFAULT_EVICTION_POLICY)
    if policy not in SGLANG_EVICTION_POLICIES:
        raise ScenarioError(
            f"[sglang]: eviction_policy must be one of {', '.join(SGLANG_EVICTION_POLICIES)}, "
            f"not {policy!r}"
        )
    return SGLangOptions(
        modes=tuple(dict.fromkeys(modes)),
        page_size=page_size,
        num_slots=num_slots,
        eviction_policy=policy,
        narration=_narration_tables(raw.get("narration", {}), "[sglang.narration]"),
    )


def sglang_refusal(scenario: Scenario) -> str | None:
    """Why ``scenario`` cannot be played on SGLang's model, or None if it can."""
    if "sglang" not in scenario.engines:
        return (
            f"scenario {scenario.name!r} does not run on SGLang (it plays on "
            f"{', '.join(scenario.engines)} only)"
        )
    try:
        validate_sglang(scenario)
    except ScenarioError as error:
        return str(error)
    return None


def validate_sglang(scenario: Scenario, where: ActionPlace | None = None) -> None:
    """Refuse, with the reason, what SGLang's model cannot play: vLLM-only actions,
    fields and connectors, or a request larger than the SGLang pool."""
    place = where or (lambda part, i: f"{scenario.name} {part} #{i + 1}")
    options = scenario.sglang
    if options.page_size < 1:
        raise ScenarioError(f"[sglang]: page_size must be at least 1, not {options.page_size}")
    slots = scenario.sglang_slots()
    if slots < options.page_size or slots > MAX_POOL_BLOCKS * 64:
        raise ScenarioError(
            f"[sglang]: the pool must hold from one page to {MAX_POOL_BLOCKS * 64:,} slots, "
            f"not {slots:,}"
        )
    if options.page_size > 1 and slots % options.page_size:
        raise ScenarioError(
            f"[sglang]: {slots} slots is not a whole number of pages of {options.page_size}"
        )
    if scenario.engine != EngineOptions():
        raise ScenarioError(
            f"scenario {scenario.name!r}: its [engine] options (CPU offload, auxiliary "
            "outputs, keep mode's fixes) are vLLM's and not modelled on SGLang"
        )
    placed = [("setup", i, a) for i, a in enumerate(scenario.setup)]
    placed += [("steps", i, a) for i, a in enumerate(scenario.script)]
    for part, index, action in placed:
        if action.kind not in SGLANG_ACTIONS:
            raise ScenarioError(
                f"{place(part, index)}: {action.kind} is vLLM's; on SGLang a scenario may use "
                f"{', '.join(SGLANG_ACTIONS)}"
            )
        if action.kind == "reset_prefix_cache" and (
            action.reset_running_requests or action.keep_running_requests
        ):
            raise ScenarioError(
                f"{place(part, index)}: reset_prefix_cache's flags are vLLM's (SGLang's "
                "flush_cache takes none)"
            )
        spec = action.request
        if spec is None:
            continue
        if spec.prompt_embeds is not None:
            raise ScenarioError(
                f"{place(part, index)}: prompt_embeds is not modelled on SGLang (SGLang takes "
                "input_embeds only with its radix cache off, --disable-radix-cache)"
            )
        for field in SGLANG_REQUEST_FIELDS_NOT_MODELLED:
            if getattr(spec, field) is not None:
                raise ScenarioError(f"{place(part, index)}: {field} is not modelled on SGLang")
        num_tokens = len(spec.prompt_token_ids)
        if not fits_an_empty_pool(num_tokens, spec.max_tokens, options.page_size, slots):
            # the smallest pool that admits it
            needed = num_tokens + min(spec.max_tokens, CLIP_MAX_NEW_TOKENS) + options.page_size + 1
            raise ScenarioError(
                f"{place(part, index)}: request {spec.request_id!r} needs {needed} KV slots "
                f"on SGLang (admission wants its prompt, its max_tokens and a page strictly "
                f"below the free slots) but the SGLang pool has {slots}"
            )


def validate(scenario: Scenario, where: ActionPlace | None = None) -> None:
    """Refuse what cannot be played, with the reason; ``where`` names an action."""
    place = where or (lambda part, i: f"{scenario.name} {part} #{i + 1}")
    if scenario.num_gpu_blocks < 2:
        raise ScenarioError(
            f"num_gpu_blocks must be at least 2 (block 0 is the null block), "
            f"not {scenario.num_gpu_blocks}"
        )
    if scenario.num_gpu_blocks > MAX_POOL_BLOCKS:
        raise ScenarioError(f"num_gpu_blocks must be at most {MAX_POOL_BLOCKS}")
    if scenario.block_size < 1:
        raise ScenarioError(f"block_size must be at least 1, not {scenario.block_size}")
    if scenario.max_num_batched_tokens < 1:
        raise ScenarioError("max_num_batched_tokens must be at least 1")
    if not 0.0 <= scenario.watermark < 1.0:
        raise ScenarioError(
            f"[pool]: watermark is a fraction of the pool, at least 0.0 and below 1.0, "
            f"not {scenario.watermark}"
        )
    num_cpu_blocks = scenario.engine.num_cpu_blocks
    if not 2 <= num_cpu_blocks <= MAX_POOL_BLOCKS:
        raise ScenarioError(
            f"[engine]: num_cpu_blocks must be between 2 (block 0 is the null block) and "
            f"{MAX_POOL_BLOCKS}, not {num_cpu_blocks}"
        )
    usable = scenario.num_gpu_blocks - 1
    placed = [("setup", i, a) for i, a in enumerate(scenario.setup)]
    placed += [("steps", i, a) for i, a in enumerate(scenario.script)]
    seen: dict[str, str] = {}  # request id -> where it is added
    for part, index, action in placed:
        spec = action.request
        if spec is None:
            continue
        if spec.request_id in seen:
            raise ScenarioError(
                f"{place(part, index)}: request id {spec.request_id!r} is used twice "
                f"(first at {seen[spec.request_id]})"
            )
        seen[spec.request_id] = place(part, index)
        # The last sampled token is never computed, so it needs no slot.
        num_tokens = len(spec.prompt_token_ids) + spec.max_tokens - 1
        needed = cdiv(num_tokens, scenario.block_size)
        if needed > usable:
            raise ScenarioError(
                f"{place(part, index)}: request {spec.request_id!r} needs {needed} blocks "
                f"({num_tokens} tokens at block_size {scenario.block_size}) but the pool "
                f"has only {usable} usable blocks (num_gpu_blocks {scenario.num_gpu_blocks} "
                f"minus the null block)"
            )
    for part, index, action in placed:
        if action.kind == "abort" and action.request_id not in seen:
            raise ScenarioError(
                f"{place(part, index)}: abort names request {action.request_id!r}, "
                "which never arrives"
            )


def _scenario_text(name: str) -> str:
    return resources.files("content").joinpath("scenarios", f"{name}.toml").read_text("utf-8")


@cache
def _scenario_file(name: str) -> dict[str, Any]:
    """A built-in scenario's file, parsed once: listing the scenarios, their titles and
    their timelines each read every file, and parsing TOML is most of it (in Pyodide,
    about a tenth of a second of the static site's start each time)."""
    return tomllib.loads(_scenario_text(name))


@cache
def scenario_names(engine: str = "vllm") -> tuple[str, ...]:
    """Every scenario under content/scenarios that plays on ``engine`` (vLLM by
    default: the app's list), in the order the list shows them."""
    folder = resources.files("content").joinpath("scenarios")
    names = [e.name.removesuffix(".toml") for e in folder.iterdir() if e.name.endswith(".toml")]
    data = {name: _scenario_file(name) for name in names}
    names = [name for name in names if engine in data[name].get("engines", ["vllm"])]
    return tuple(sorted(names, key=lambda name: (data[name].get("order", 100), name)))


def scenario_data(name: str) -> dict[str, Any]:
    """A built-in scenario's file as data (not yet checked), the caller's to change."""
    return copy.deepcopy(_built_in_data(name))


def _built_in_data(name: str) -> dict[str, Any]:
    """A built-in scenario's file as data, shared: not to be changed."""
    names = tuple(dict.fromkeys(n for engine in ENGINES for n in scenario_names(engine)))
    if name not in names:
        raise ScenarioError(f"unknown scenario {name!r} (one of {', '.join(names)})")
    try:
        return _scenario_file(name)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"scenario {name!r} is not valid TOML: {error}") from None


@cache
def load_scenario(name: str) -> Scenario:
    """A built-in scenario, checked (once: a Scenario does not change)."""
    return parse_scenario(name, _built_in_data(name))


def check_mode(scenario: Scenario, mode: str) -> Mode:
    if mode not in scenario.modes:
        raise ScenarioError(
            f"unknown mode {mode!r} for scenario {scenario.name!r} "
            f"(one of {', '.join(scenario.modes)})"
        )
    return mode  # checked above
