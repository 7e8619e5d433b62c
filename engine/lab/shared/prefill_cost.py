"""What a cache hit saves: prefill FLOPs and time, with and without a cached prefix.

Per token at position s, a decoder costs about 2P (the weights) plus 4·L·h·d_h·s
(attention over the s tokens before it). Prefilling positions [a, b) costs the
sum of that over s, so a cached prefix of c tokens removes the positions [0, c).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelShape:
    name: str
    num_parameters: float  # P
    num_layers: int  # L
    num_heads: int  # h (query heads)
    head_dim: int  # d_h


LLAMA_3_8B = ModelShape("Llama-3-8B", 8.03e9, 32, 32, 128)


def flops_for_positions(model: ModelShape, first: int, last: int) -> float:
    """FLOPs to prefill positions first..last-1: sum of 2P + 4·L·h·d_h·s."""
    if last <= first:
        return 0.0
    count = last - first
    position_sum = (first + last - 1) * count / 2
    attention = 4 * model.num_layers * model.num_heads * model.head_dim
    return 2 * model.num_parameters * count + attention * position_sum


@dataclass(frozen=True)
class PrefillCost:
    prompt_tokens: int
    cached_tokens: int
    flops_without_cache: float
    flops_with_cache: float
    seconds_without_cache: float
    seconds_with_cache: float

    @property
    def speedup(self) -> float:
        return self.flops_without_cache / self.flops_with_cache

    @property
    def redundant_fraction(self) -> float:
        """Share of the uncached prefill spent recomputing what the cache holds."""
        return 1 - self.flops_with_cache / self.flops_without_cache

    @property
    def seconds_saved(self) -> float:
        return self.seconds_without_cache - self.seconds_with_cache


def prefill_cost(
    prompt_tokens: int,
    cached_tokens: int,
    flops_per_second: float,
    model: ModelShape = LLAMA_3_8B,
) -> PrefillCost:
    """Cost of prefilling a prompt from scratch and after a cache hit of ``cached_tokens``."""
    if not 0 <= cached_tokens < prompt_tokens:
        raise ValueError("cached_tokens must be at least 0 and less than prompt_tokens")
    if flops_per_second <= 0:
        raise ValueError("flops_per_second must be positive")
    without = flops_for_positions(model, 0, prompt_tokens)
    with_cache = flops_for_positions(model, cached_tokens, prompt_tokens)
    return PrefillCost(
        prompt_tokens=prompt_tokens,
        cached_tokens=cached_tokens,
        flops_without_cache=without,
        flops_with_cache=with_cache,
        seconds_without_cache=without / flops_per_second,
        seconds_with_cache=with_cache / flops_per_second,
    )


# The seed's reference hardware: an H100 SXM's dense bf16 peak, at the model FLOPs
# utilisation a good prefill reaches. 989.4e12 * 0.45 is about 445 TFLOP/s achieved.
H100_BF16_PEAK_FLOPS = 989.4e12
PREFILL_MFU = 0.45
H100_ACHIEVED_FLOPS = H100_BF16_PEAK_FLOPS * PREFILL_MFU
SEED_REQUESTS_PER_SECOND = 20  # the seed's load


@dataclass(frozen=True)
class Saturation:
    """Prefill work per second that a cache hit of ``cached_tokens`` would have saved."""

    requests_per_second: float
    cached_tokens: int
    flops_per_second: float = H100_ACHIEVED_FLOPS
    model: ModelShape = LLAMA_3_8B

    @property
    def redundant_flops_per_second(self) -> float:
        return self.requests_per_second * flops_for_positions(self.model, 0, self.cached_tokens)

    @property
    def saturated(self) -> bool:
        """The redundant work alone needs more than the hardware delivers."""
        return self.redundant_flops_per_second > self.flops_per_second

    # in the units a reader sees (for narration templates)
    @property
    def rate(self) -> float:
        return self.requests_per_second

    @property
    def redundant_tflops(self) -> float:
        return self.redundant_flops_per_second / 1e12

    @property
    def achieved_tflops(self) -> float:
        return self.flops_per_second / 1e12

    @property
    def peak_tflops(self) -> float:
        return H100_BF16_PEAK_FLOPS / 1e12

    @property
    def mfu_percent(self) -> float:
        return PREFILL_MFU * 100

    @property
    def saturating_rate(self) -> float:
        """The load, in requests/s, from which the redundant work alone fills the hardware."""
        return self.flops_per_second / flops_for_positions(self.model, 0, self.cached_tokens)
