"""Differential check: the block key's extra items on vLLM 0.33.0's real Request and ours.

Runs under a Python that can import vLLM (see vllm_differential.py), e.g.

    /tmp/vllm-venv/bin/python tests/fidelity/extra_keys_differential.py --cases 2000

Each case draws a block size (1 to 64), a prompt, up to five multimodal items placed at
random (inside one block, across blocks, several in one block, the same identifier more
than once), in half the cases prompt embeddings over a random run of the prompt (a
float32 tensor on vLLM's side, rows of the same floats on ours, zeros where the mask
says token), and at random a LoRA adapter and a cache salt. It builds vLLM's real
``Request`` with its real request block hasher and ours with the same values, then
grows both by generated tokens a few at a time. After construction and after every
growth it compares every block hash, byte for byte; at the end it compares each block's
extra keys from ``generate_block_hash_extra_keys`` (the multimodal index carried from
block to block) and their untagged form for KV events. The first difference is printed
with the case's seed; the exit status is 1 if any case differed.
"""

from __future__ import annotations

import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

from drivers import run_seeded_cases

IDENTIFIERS = ("img-cat", "img-dog", "audio-7f3a")
LORA_NAMES = ("sql", "chat")
COVERAGE: Counter[str] = Counter()


def draw(rng: random.Random) -> dict[str, Any]:
    """One case's request: everything both sides are built from."""
    bs = rng.choice([1, 2, 3, 4, 5, 8, 16, 16, 32, 64, rng.randint(1, 64)])
    num_prompt = rng.randint(1, min(6 * bs + rng.randint(0, bs), 400))
    items: list[tuple[str, int, int]] = []
    cursor = 0
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 5])):
        gap = rng.choice([0, 0, 1, rng.randint(0, 2 * bs)])
        length = rng.choice([1, rng.randint(1, bs), rng.randint(1, 3 * bs)])
        if cursor + gap + length > num_prompt:
            break
        items.append((rng.choice(IDENTIFIERS), cursor + gap, length))
        cursor += gap + length
    embeds = None
    if rng.random() < 0.5:
        start = rng.randint(0, num_prompt - 1)
        end = rng.randint(start + 1, num_prompt)
        hidden = rng.randint(1, 4)
        # Multiples of 1/8: exact in float32, so both sides hold the same bits.
        embedded = {p: [rng.randint(-64, 64) / 8 for _ in range(hidden)] for p in range(start, end)}
        rows = [embedded.get(p, [0.0] * hidden) for p in range(num_prompt)]
        mask = [p not in embedded for p in range(num_prompt)]
        embeds = (rows, mask)
    return {
        "bs": bs,
        "prompt": [rng.randint(0, 50) for _ in range(num_prompt)],
        "items": items,
        "embeds": embeds,
        "lora": rng.choice([None, None, *LORA_NAMES]),
        "salt": rng.choice([None, None, "alice"]),
        "growth": [rng.randint(1, 2 * bs) for _ in range(rng.randint(0, 4))],
    }


class Side:
    """One implementation: its Request, block hasher and extra-key functions."""

    def __init__(self, real: bool, case: dict[str, Any]) -> None:
        bs = case["bs"]
        if real:
            import torch
            from vllm.lora.request import LoRARequest
            from vllm.multimodal.inputs import MultiModalFeatureSpec, PlaceholderRange
            from vllm.sampling_params import SamplingParams
            from vllm.utils.hashing import get_hash_fn_by_name
            from vllm.v1.core import kv_cache_utils as utils
            from vllm.v1.request import Request

            hash_fn = get_hash_fn_by_name("sha256")
            utils.init_none_hash(hash_fn)
            features = [
                MultiModalFeatureSpec(None, "image", name, PlaceholderRange(offset, length))
                for name, offset, length in case["items"]
            ]
            lora = case["lora"]
            embeds = case["embeds"]
            self.request = Request(
                request_id="r",
                prompt_token_ids=list(case["prompt"]),
                sampling_params=SamplingParams(max_tokens=512, ignore_eos=True),
                pooling_params=None,
                arrival_time=0.0,
                prompt_embeds=None
                if embeds is None
                else torch.tensor(embeds[0], dtype=torch.float32),
                prompt_is_token_ids=None if embeds is None else embeds[1],
                mm_features=features,
                lora_request=LoRARequest(lora, LORA_NAMES.index(lora) + 1, f"/adapters/{lora}")
                if lora
                else None,
                cache_salt=case["salt"],
                block_hasher=utils.get_request_block_hasher(bs, hash_fn),
            )
        else:
            from engine.vllm import kv_cache_utils as utils  # type: ignore[no-redef]
            from engine.vllm.multimodal import (  # type: ignore[assignment]
                MultiModalFeatureSpec,
                PlaceholderRange,
            )
            from engine.vllm.prompt_embeds import PromptEmbeds
            from engine.vllm.request import Request  # type: ignore[assignment]

            utils.init_none_hash(utils.sha256)
            embeds = case["embeds"]
            self.request = Request(  # type: ignore[call-arg]
                "r",
                case["prompt"],
                max_tokens=512,
                block_hasher=utils.get_request_block_hasher(bs, utils.sha256),
                cache_salt=case["salt"],
                lora_name=case["lora"],
                mm_features=[
                    MultiModalFeatureSpec(None, "image", name, PlaceholderRange(offset, length))
                    for name, offset, length in case["items"]
                ],
                prompt_embeds=None if embeds is None else PromptEmbeds(embeds[0]),
                prompt_is_token_ids=None if embeds is None else embeds[1],
            )
        self.utils = utils
        self.bs = bs

    def hashes(self) -> list[str]:
        return [bytes(h).hex() for h in self.request.block_hashes]

    def grow(self, tokens: list[int]) -> None:
        self.request.append_output_token_ids(tokens)

    def extra_keys(self) -> list[Any]:
        keys, mm_idx, per_block = None, 0, []
        for start in range(0, len(self.request.block_hashes) * self.bs, self.bs):
            keys, mm_idx = self.utils.generate_block_hash_extra_keys(
                self.request, start, start + self.bs, mm_idx
            )
            per_block.append((keys, mm_idx))
        events = self.utils.to_event_extra_keys([keys for keys, _ in per_block])
        return [per_block, as_tuples(events)]


def as_tuples(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(as_tuples(v) for v in value)
    return value


def count(case: dict[str, Any]) -> None:
    bs, items = case["bs"], case["items"]
    COVERAGE["items"] += len(items)
    for _, offset, length in items:
        end = offset + length
        if offset % bs:
            COVERAGE["items starting inside a block"] += 1
        if offset // bs != (end - 1) // bs:
            COVERAGE["items across blocks"] += 1
    starts = [offset // bs for _, offset, _ in items]
    COVERAGE["blocks with two or more item starts"] += sum(n > 1 for n in Counter(starts).values())
    COVERAGE["with prompt embeddings"] += case["embeds"] is not None


def run_case(seed: int) -> str | None:
    rng = random.Random(seed)
    case = draw(rng)
    count(case)
    real, ours = Side(True, case), Side(False, case)
    if real.hashes() != ours.hashes():
        return f"seed {seed}: prompt block hashes differ (block size {case['bs']}, {case})"
    for n in case["growth"]:
        tokens = [rng.randint(0, 50) for _ in range(n)]
        real.grow(tokens)
        ours.grow(tokens)
        if real.hashes() != ours.hashes():
            return f"seed {seed}: block hashes differ after {n} generated tokens ({case})"
    COVERAGE["block hashes"] += len(real.hashes())
    if real.extra_keys() != ours.extra_keys():
        return f"seed {seed}: extra keys differ: {real.extra_keys()} != {ours.extra_keys()}"
    return None


def main() -> int:
    return run_seeded_cases(__doc__.splitlines()[0], run_case, COVERAGE)


if __name__ == "__main__":
    sys.exit(main())
