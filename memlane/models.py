"""Chat models from the settings: the reply model and the memory graph's model."""

from __future__ import annotations

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import Settings

HOW_TO_CONFIGURE = (
    "No chat model is configured. Set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL for a local "
    "OpenAI-compatible server (Ollama: http://localhost:11434/v1, vLLM: http://localhost:8000/v1) "
    "and MEMLANE_CHAT_MODEL for its model name, then restart."
)


def _openai(settings: Settings, model: str) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model,
        # local servers want no key, but the client insists on one
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else "not-needed",
        base_url=settings.openai_base_url,
        timeout=settings.llm_timeout_seconds,
        max_retries=settings.llm_max_retries,
        streaming=True,
    )


def chat_model_from_settings(settings: Settings) -> BaseChatModel | None:
    """The reply model, or None when no endpoint is configured."""
    return _openai(settings, settings.chat_model) if settings.has_chat_model else None


def memory_model_from_settings(settings: Settings) -> BaseChatModel | None:
    """The memory graph's model (`memory_model`, else `chat_model`), or None when not configured."""
    return _openai(settings, settings.memory_model_name) if settings.has_chat_model else None
