"""A generation request and its life cycle (vLLM's ``v1/request.py``)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from engine.vllm.kv_cache_utils import BlockHash
from engine.vllm.multimodal import MultiModalFeatureSpec
from engine.vllm.prompt_embeds import PromptEmbeds


class RequestStatus(enum.IntEnum):
    """Where a request is; every status after PREEMPTED means finished."""

    WAITING = enum.auto()
    RUNNING = enum.auto()
    PREEMPTED = enum.auto()
    FINISHED_STOPPED = enum.auto()
    FINISHED_LENGTH_CAPPED = enum.auto()
    FINISHED_ABORTED = enum.auto()

    @staticmethod
    def is_finished(status: RequestStatus) -> bool:
        return status > RequestStatus.PREEMPTED


class Request:
    """Prompt, generated tokens, progress and the hashes of its full blocks.

    The hashes are kept up to date by the block hasher: at construction for the
    prompt and on every appended output token, so generated tokens are cached
    exactly like prompt tokens.
    """

    def __init__(
        self,
        request_id: str,
        prompt_token_ids: Sequence[int],
        max_tokens: int = 16,
        block_hasher: Callable[[Request], list[BlockHash]] | None = None,
        cache_salt: str | None = None,
        lora_name: str | None = None,
        lora_int_id: int | None = None,
        prompt_logprobs: int | None = None,
        lora_path: str | None = None,
        mm_features: Sequence[MultiModalFeatureSpec] | None = None,
        prompt_embeds: PromptEmbeds | None = None,
        prompt_is_token_ids: Sequence[bool] | None = None,
    ) -> None:
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.max_tokens = max_tokens
        self.cache_salt = cache_salt
        self.lora_name = lora_name
        self.lora_int_id = lora_int_id
        # vLLM's LoRARequest needs a non-empty path, and the path is part of the block
        # hash; a scenario names only the adapter, so its path is derived from the name.
        self.lora_path = lora_path or (f"/adapters/{lora_name}" if lora_name else None)
        self.prompt_logprobs = prompt_logprobs
        # Prompt logprobs need the logits of every prompt token, so such a
        # request must compute its whole prompt instead of reading the cache.
        self.skip_reading_prefix_cache = prompt_logprobs is not None

        self.status = RequestStatus.WAITING
        self.num_computed_tokens = 0
        self.num_preemptions = 0
        # Tokens found in the prefix cache at first admission; -1 until then.
        self.num_cached_tokens = -1
        # Multimodal items, sorted by placeholder offset and not overlapping.
        self.mm_features = list(mm_features or ())
        # A prompt given partly as embeddings: one row per prompt position (zeros where
        # the mask says the position is a token).
        self.prompt_embeds = prompt_embeds
        self.prompt_is_token_ids = (
            None if prompt_is_token_ids is None else list(prompt_is_token_ids)
        )
        if prompt_embeds is not None and len(prompt_embeds) != len(self.prompt_token_ids):
            raise ValueError("Prompt token ids and prompt embeds had different lengths")
        # Each block's embeddings are hashed once, then looked up here.
        self._prompt_embeds_per_block_hashes: dict[tuple[int, int], bytes] = {}
        self._output_token_ids: list[int] = []
        if self.prompt_is_token_ids is None:
            self._all_token_ids: list[int] = list(prompt_token_ids)
        else:
            # A position that comes as an embedding holds token id 0: only the
            # embeddings' key tells two such blocks apart.
            self._all_token_ids = [
                token if is_token else 0
                for token, is_token in zip(prompt_token_ids, self.prompt_is_token_ids, strict=True)
            ]

        self.block_hashes: list[BlockHash] = []
        self._block_hasher = block_hasher
        self.update_block_hashes()

    def update_block_hashes(self) -> None:
        if self._block_hasher is not None:
            self.block_hashes.extend(self._block_hasher(self))

    def append_output_token_ids(self, token_ids: int | Sequence[int]) -> None:
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        self._output_token_ids.extend(token_ids)
        self._all_token_ids.extend(token_ids)
        self.update_block_hashes()

    @property
    def all_token_ids(self) -> list[int]:
        return self._all_token_ids

    @property
    def output_token_ids(self) -> list[int]:
        return self._output_token_ids

    @property
    def num_tokens(self) -> int:
        return len(self._all_token_ids)

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self._output_token_ids)

    def is_finished(self) -> bool:
        return RequestStatus.is_finished(self.status)

    def __repr__(self) -> str:
        return f"Request({self.request_id!r}, {self.status.name}, tokens={self.num_tokens})"
