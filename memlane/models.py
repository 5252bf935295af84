"""Chat models from the settings' models part: the reply model and the memory graph's model."""

from __future__ import annotations

from langchain_core.language_models.chat_models import BaseChatModel

from memlane.config import ModelSettings

HOW_TO_CONFIGURE = (
    "No chat model is configured. Set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL for a local "
    "OpenAI-compatible server (Ollama: http://localhost:11434/v1, vLLM: http://localhost:8000/v1) "
    "and MEMLANE_CHAT_MODEL for its model name, then restart."
)


def _openai(models: ModelSettings, model: str) -> BaseChatModel:
    import httpx
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        # a connection pool of its own: langchain-openai's shared default is bound to the event loop
        # that used it first, and each sync `Memory` (memlane/memory.py) runs a loop of its own
        http_async_client=httpx.AsyncClient(timeout=models.llm_timeout_seconds),
        model=model,
        # local servers want no key, but the client insists on one
        api_key=models.openai_api_key.get_secret_value() if models.openai_api_key else "not-needed",
        base_url=models.openai_base_url,
        timeout=models.llm_timeout_seconds,
        max_retries=models.llm_max_retries,
        streaming=True,
    )


def chat_model_from_settings(models: ModelSettings) -> BaseChatModel | None:
    """The reply model, or None when no endpoint is configured."""
    return _openai(models, models.chat_model) if models.has_chat_model else None


def memory_model_from_settings(models: ModelSettings) -> BaseChatModel | None:
    """The memory graph's model (the first of `memory_models`, else `memory_model`, else `chat_model`),
    or None when not configured."""
    return _openai(models, models.memory_model_name) if models.has_chat_model else None


def memory_fallbacks_from_settings(models: ModelSettings) -> list[BaseChatModel]:
    """The models after the first of `memory_models` (the fallback chain), in order; [] when none."""
    return [_openai(models, name) for name in models.memory_models[1:]] if models.has_chat_model else []


# what to do about an HTTP status a model server answered
_STATUS_HINTS = {
    400: "the server refused the request; check MEMLANE_CHAT_MODEL and the server's log",
    401: "check OPENAI_API_KEY",
    403: "check OPENAI_API_KEY and what it may use",
    404: "check MEMLANE_CHAT_MODEL and OPENAI_BASE_URL (usually ending in /v1)",
    429: "the server is rate-limiting or out of quota; wait a moment and send again",
}


def _error_detail(error: BaseException) -> str:
    body = getattr(error, "body", None)  # OpenAI-style errors keep the server's JSON answer here
    if isinstance(body, dict):
        inner = body.get("error", body)
        detail = inner.get("message") if isinstance(inner, dict) else inner
        if detail:
            return str(detail)[:300]
    return (str(getattr(error, "message", "") or error) or type(error).__name__)[:300]


def describe_model_error(error: BaseException, model: object, models: ModelSettings) -> str:
    """One sentence on a failed chat-model call: who answered what, and what to do about it.

    Errors are told apart by what they carry (an HTTP status, a name saying timeout or
    connection), so OpenAI's, other providers' and httpx's errors read alike.
    """
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    endpoint = getattr(model, "openai_api_base", None) or models.openai_base_url
    who = "the model" + (f" {name}" if isinstance(name, str) else "") + (f" at {endpoint}" if endpoint else "")
    kind = type(error).__name__
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        hint = _STATUS_HINTS.get(status, "look at the model server's log")
        return f"{who} answered {status}: {_error_detail(error)} ({hint})"
    if isinstance(error, TimeoutError) or "Timeout" in kind:
        return (
            f"{who} did not answer within {models.llm_timeout_seconds:g} s "
            "(raise MEMLANE_LLM_TIMEOUT_SECONDS, or check the server)"
        )
    if "Connection" in kind:
        return f"{who} could not be reached: {_error_detail(error)} (is the server running? check OPENAI_BASE_URL)"
    return (
        f"the reply failed with {kind}: {_error_detail(error)} "
        "(send again; if it keeps failing, look at the model server's log and check "
        "MEMLANE_CHAT_MODEL / OPENAI_BASE_URL)"
    )
