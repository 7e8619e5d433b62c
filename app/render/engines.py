"""One view, either engine: a view's render on a vLLM timeline is vLLM's renderer, on an
SGLang timeline SGLang's, or nothing where the view has no SGLang meaning (the free
queue, the hash chain, CPU offload, the prefill calculator), so its deck hides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.timeline import Timeline

# A timeline of either engine: what the app opens and every view renders.
AnyTimeline = Timeline | SGLangTimeline
VLLMRender = Callable[[Timeline, int], str]
SGLangRender = Callable[[SGLangTimeline, int], str]


class AnyRender(Protocol):
    """A view's pure render, of either engine's timeline (a Protocol, not a Callable:
    a view declares it as its staticmethod ``render``)."""

    def __call__(self, timeline: AnyTimeline, step: int) -> str: ...


def no_page(timeline: SGLangTimeline, step: int) -> str:
    """A view with nothing to show on SGLang."""
    return ""


def per_engine(vllm: VLLMRender, sglang: SGLangRender = no_page) -> AnyRender:
    """The render of a view that follows the engine of the timeline it is given."""

    def render(timeline: AnyTimeline, step: int) -> str:
        if isinstance(timeline, SGLangTimeline):
            return sglang(timeline, step)
        return vllm(timeline, step)

    render.__doc__ = f"{vllm.__name__} on vLLM, {sglang.__name__} on SGLang"
    return render
