"""`POST /v1/chat/completions` of `memlane serve`: the OpenAI wire format around recall and saving.

    request ─→ persona (system prompt, upstream, recall settings) ─→ recall into the system prompt
            ─→ upstream /chat/completions (streamed or not) ─→ reply to the client
            ─→ after the reply completes: the turn is saved and the memory graph scheduled (a
               background task: it never sits before the first token)

Recall and saving are memlane's own (the turn service: `TurnService.recall`, `TurnService.save`,
the same paths the agent middleware uses); this module only speaks HTTP. Fields of the
request it does not know (temperature, tools, ...) go to the upstream unchanged.

What a request saves:

- The messages after the last one the session already stored: the user lines after the
  request's last assistant message (what the user says now) and the reply. Re-sent history is
  recognised by the stored tail and stored once. The user lines said now are new messages of
  their own (their ids name the request), so a client that sends only its last message and says
  "yes" twice stores "yes" twice.
- Retries: a request with an `Idempotency-Key` header (any text, e.g. a UUID the client makes
  once per request and sends again with each retry of it) is saved once however often it is
  sent, streamed or not: its lines and its reply take their ids from the key (scoped to the
  user and session), so a retry of a request whose client gave up (its reply still stored)
  does not add a second reply. The `openai` client sends no stable key of its own (its
  `x-stainless-retry-count` counts tries); pass one: `extra_headers={"Idempotency-Key": key}`.
  Without a key every request is a new turn.
- Reusing a key for another request of the session (another body or persona; `stream` may differ)
  answers 422 `idempotency_key_reused`, as Stripe does: the key names the request it first came
  with for a day (`IDEMPOTENCY_KEY_SECONDS`), in every process on the same Redis. Before, the
  second request got a fresh reply and nothing of it was stored (its reply took the first one's id).
  A request with a key is not answered unchecked: while Redis is slow the check is waited for,
  and a Redis that is silent (frozen) or away answers 503 with Retry-After (a request without a
  key is answered without memory then, its turn saved once Redis is back).
- A client that leaves mid-stream (closes the connection before the reply completed): what the
  user said is saved, the partial reply is not (the user never saw it whole, and half a sentence
  must not become a memory). When the upstream fails instead, nothing is saved: the client got
  an error and sends the request again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from memlane import MemoryStore, Message, QuotaExceeded, Settings, StoreError
from memlane.deadlines import within_budget
from memlane.masking import mask_secrets
from memlane.persistence import MemoryAgentContext, turn_messages
from memlane.recall import Recall, RecallParts, recall_system_prompt
from memlane.serve.chat_request import (  # noqa: F401  (the request's models, importable from here as before)
    ChatCompletionRequest,
    ChatMessage,
    JsonBody,
    MemoryToggles,
    json_problem,
)
from memlane.serve.config import Persona
from memlane.serve.metrics import ServeMetrics
from memlane.store.ids import clean_text, stable_id
from memlane.store.scopes import split_user_id
from memlane.turns import TurnService

logger = logging.getLogger(__name__)

IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_SECONDS = 24 * 3600  # how long a key names the request it first came with (Stripe's day)


class UpstreamFailed(Exception):
    """The upstream model server failed or could not be reached; the message says which and why."""

    def __init__(self, message: str, upstream_status: int | None = None) -> None:
        super().__init__(message)
        self.upstream_status = upstream_status


@dataclass
class ChatTurn:
    """One chat request, resolved: who, which persona, what goes upstream, what is saved after."""

    request: ChatCompletionRequest
    persona_id: str
    persona: Persona
    settings: Settings
    identity: MemoryAgentContext
    completion_id: str
    recalled: Recall | None = None
    idempotency_key: str | None = None  # the client's Idempotency-Key: its retries are saved once
    # "pending" until the reply completed and went to the saver ("saved") or the upstream failed
    outcome: str = "pending"

    @property
    def recall_enabled(self) -> bool:
        return bool(self.identity.recall_enabled)

    @property
    def auto_save(self) -> bool:
        return bool(self.identity.auto_save_enabled)

    def upstream_body(self) -> dict[str, Any]:
        """The request the upstream gets: the client's, with the persona's model and the system
        prompt (persona prompt, the client's system messages, then the recalled memories)."""
        system_parts = [self.persona.system_prompt.strip()] if self.persona.system_prompt.strip() else []
        system_parts += [m.text for m in self.request.messages if m.role == "system" and m.text.strip()]
        system_prompt = (
            recall_system_prompt("\n\n".join(system_parts), self.recalled)
            if self.recalled
            else "\n\n".join(system_parts)
        )
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages += [m.model_dump(exclude_none=True) for m in self.request.messages if m.role != "system"]
        # the memlane user id stays here; memory_config is memlane's
        extra = {k: v for k, v in (self.request.model_extra or {}).items()}
        return {**extra, "model": self.persona.model, "messages": messages, "stream": self.request.stream}

    def request_id(self, *parts: str) -> str:
        """An id of something this request says: from the Idempotency-Key (a retry gets the same
        ids) or, without one, from this completion (a request is a new turn)."""
        request = ("key", self.idempotency_key) if self.idempotency_key else ("completion", self.completion_id)
        return stable_id("request", self.identity.user_id, self.identity.session_id, *request, *parts)

    def turn(self, reply: str | None) -> list[Message]:
        """The store messages of the request's conversation and the reply (None: the client left
        before it completed, only what the user said); the save keeps those after the last one
        already stored (several user lines sent at once are all kept)."""
        last_answer = max((i for i, m in enumerate(self.request.messages) if m.role == "assistant"), default=-1)
        history: list[BaseMessage] = []
        for position, message in enumerate(self.request.messages):
            if message.role == "user":
                # said now (after the request's last answer): a message of this request, not one
                # that happens to read the same and sit at the same position of another request
                said_now = self.request_id(str(position), message.text) if position > last_answer else None
                history.append(HumanMessage(message.text, name=message.name, id=said_now))
            elif message.role == "assistant":
                history.append(AIMessage(message.text))
        if reply is not None:
            reply_id = self.request_id("reply") if self.idempotency_key else f"{self.completion_id}:assistant"
            history.append(AIMessage(clean_text(reply), id=reply_id))
        return turn_messages(history, self.identity)


def request_fingerprint(turn: ChatTurn) -> str:
    """What a retry of the turn's request repeats: its body (streamed or not alike) and persona."""
    body = turn.request.model_dump(mode="json", exclude={"stream"})
    body.pop("stream_options", None)
    return stable_id("request", turn.persona_id, json.dumps(body, sort_keys=True, ensure_ascii=False))


async def key_reused(turn: ChatTurn, store: MemoryStore, within_seconds: float) -> bool:
    """True when the turn's Idempotency-Key came before with another request (`request_fingerprint`);
    the first request with a key claims it. A slow Redis is waited for; one that says nothing for
    `within_seconds`, or fails, makes it a StoreError (a 503 with Retry-After): a request whose key
    was not checked could be a reuse, answered and then dropped (its reply takes the first one's id)."""
    if not turn.idempotency_key:
        return False
    fingerprint = request_fingerprint(turn)
    claim = store.claim_request_key(
        # scoped as the ids it gives (`ChatTurn.request_id`): the same key in another session is another request
        turn.identity.user_id,
        stable_id(turn.identity.session_id, turn.idempotency_key),
        fingerprint,
        ttl_seconds=IDEMPOTENCY_KEY_SECONDS,
    )
    try:
        earlier = await within_budget(claim, store, within_seconds, what=f"the {IDEMPOTENCY_HEADER} check")
    except StoreError as error:
        raise StoreError(
            f"the {IDEMPOTENCY_HEADER} {turn.idempotency_key!r} could not be checked ({error}); "
            "nothing was answered nor stored: send the request again with the same key"
        ) from error
    return earlier is not None and earlier != fingerprint


TURN_NOT_SAVED_HEADER = "X-Memlane-Turn-Not-Saved"  # why a turn is not stored (a quota), on its reply


async def turn_refusal(turn: ChatTurn, store: MemoryStore, timeout: float) -> QuotaExceeded | None:
    """The quota this turn would pass if it were saved (its last user message and the reply, two
    records), found before the reply so its headers can say so; None when it fits, saving is off,
    or the store could not tell in `timeout` seconds (the save then says what happened)."""
    if not turn.identity.auto_save_enabled:
        return None
    text = last_user_text(turn.request)
    try:
        return await asyncio.wait_for(store.quota_refusal(turn.identity.user_id, 2, len(text.encode("utf-8"))), timeout)
    except (StoreError, TimeoutError) as error:
        logger.debug("the quota check of %s's turn gave no answer: %s", turn.identity.user_id, error)
        return None


def last_user_text(request: ChatCompletionRequest) -> str:
    users = [m for m in request.messages if m.role == "user"]
    return users[-1].text if users else ""


def injected(recalled: Recall | None) -> str:
    """What recall put before the model, counted by kind, never a memory's text: "2 profile,
    1 summary, 3 message, 1 event, 2 recent (412 tokens)"."""
    if recalled is None:
        return "nothing"
    counts = Counter(item.layer for item in [*recalled.profile, *recalled.memories])
    counts.update({"summary": int(recalled.summary is not None), "recent": len(recalled.recent)})
    shown = ", ".join(f"{count} {layer}" for layer, count in counts.items() if count)
    return f"{shown or 'no memory'} ({recalled.tokens} tokens)"


async def recall_for(turn: ChatTurn, turns: TurnService, metrics: ServeMetrics) -> None:
    """Recall the memories for the turn's last user message (`TurnService.recall`, as the agent
    middleware and the app do), with the persona's settings. One log line per request says what
    was injected for which store user ("tenant/user", and the agent for a persona's own memory of
    the user) and persona, counted by kind: never a memory's text."""
    owner, agent = split_user_id(turn.identity.user_id)
    user = owner if agent is None else f"{owner} (agent {agent})"
    persona = turn.persona_id
    if not turn.recall_enabled:
        logger.info("recall for %s (persona %s): off for this request, nothing injected", user, persona)
        return
    started = time.perf_counter()
    turn.recalled = await turns.recall(
        turn.identity,
        last_user_text(turn.request),
        exclude_texts=[m.text for m in turn.request.messages],
        parts=RecallParts.of(turn.settings),
        relevance=False,  # given by `relevance_for` while the upstream starts its answer
    )
    if turn.recalled is None:  # Redis away: answered without memory
        metrics.recall_failures.inc()
        logger.info("recall for %s (persona %s): memory unavailable, nothing injected", user, persona)
        return
    metrics.recall_seconds.observe(time.perf_counter() - started)
    if turn.recalled.search_incomplete:  # a cluster primary's index still reading, or a slot moving
        metrics.recall_incomplete.inc()
    logger.info("recall for %s (persona %s): injected %s", user, persona, injected(turn.recalled))


async def relevance_for(turn: ChatTurn, turns: TurnService) -> None:
    """The recalled items' relevance (what `GET .../recall` and the logs show; nothing the upstream
    is sent), given while the upstream answers (a stream: once its first chunk is relayed) rather
    than before it is asked."""
    if turn.recalled is not None:
        await turns.add_relevance(turn.identity, turn.recalled, RecallParts.of(turn.settings))


def _upstream_error(persona: Persona, settings: Settings, response: httpx.Response) -> UpstreamFailed:
    try:
        body = response.json()
        inner = body.get("error", body) if isinstance(body, dict) else body
        detail = inner.get("message") if isinstance(inner, dict) else inner
    except ValueError:
        detail = response.text
    detail = _masked(str(detail or response.reason_phrase)[:300], persona, settings)
    return UpstreamFailed(
        f"the upstream model {persona.model} at {persona.resolved_base_url(settings)} answered "
        f"{response.status_code}: {detail}",
        upstream_status=response.status_code,
    )


def _unreachable(persona: Persona, settings: Settings, error: httpx.HTTPError) -> UpstreamFailed:
    where = f"the upstream model {persona.model} at {persona.resolved_base_url(settings)}"
    if isinstance(error, httpx.TimeoutException):
        return UpstreamFailed(
            f"{where} did not answer within {settings.models.llm_timeout_seconds:g} s (MEMLANE_LLM_TIMEOUT_SECONDS)"
        )
    return UpstreamFailed(
        f"{where} could not be reached: {type(error).__name__}: {_masked(str(error), persona, settings)}"
    )


def _masked(text: str, persona: Persona, settings: Settings) -> str:
    """An upstream's words with secrets masked: the caller of the API must never see the upstream's key."""
    key = persona.api_key(settings)
    if key and len(key) >= 4:
        text = text.replace(key, "****")
    return mask_secrets(text, settings.parts().values())


def _headers(turn: ChatTurn) -> dict[str, str]:
    key = turn.persona.api_key(turn.settings)
    return {"Authorization": f"Bearer {key}"} if key else {}


async def complete(client: httpx.AsyncClient, turn: ChatTurn) -> tuple[dict[str, Any], str]:
    """The upstream's whole reply (stream false): the completion, named after the persona, and its text."""
    url = turn.persona.resolved_base_url(turn.settings) + "/chat/completions"
    try:
        response = await client.post(url, json=turn.upstream_body(), headers=_headers(turn))
    except httpx.HTTPError as error:
        raise _unreachable(turn.persona, turn.settings, error) from error
    if response.status_code >= 400:
        raise _upstream_error(turn.persona, turn.settings, response)
    try:
        completion = response.json()
        message = completion["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise UpstreamFailed(
            f"the upstream model {turn.persona.model} answered something that is not a chat completion"
        ) from error
    completion["model"] = turn.persona_id
    return completion, message.get("content") or ""


async def open_stream(client: httpx.AsyncClient, turn: ChatTurn) -> httpx.Response:
    """Start the upstream's streamed reply; its status is checked before the client sees a byte."""
    url = turn.persona.resolved_base_url(turn.settings) + "/chat/completions"
    request = client.build_request("POST", url, json=turn.upstream_body(), headers=_headers(turn))
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as error:
        raise _unreachable(turn.persona, turn.settings, error) from error
    if response.status_code >= 400:
        try:
            await response.aread()
        finally:
            await response.aclose()
        raise _upstream_error(turn.persona, turn.settings, response)
    return response


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"


def error_payload(message: str, kind: str = "upstream_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind}}


async def relay_stream(
    response: httpx.Response,
    turn: ChatTurn,
    turns: TurnService,
    metrics: ServeMetrics,
    started: float,
) -> AsyncIterator[bytes]:
    """The upstream's SSE chunks, named after the persona, then `data: [DONE]`.

    The turn is saved once the reply completed (the upstream said [DONE] or gave a finish
    reason); a reply cut off midway ends with an error event and is not saved. The recalled
    items' relevance (`relevance_for`) is given once the first chunk is on its way to the client:
    given beside the relay of that chunk, it took the cores from it.
    """
    parts: list[str] = []
    finished = False
    first = True
    relevance = False
    try:
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue  # comments, event names, keep-alives
            data = line[5:].strip()
            if data == "[DONE]":
                finished = True
                break
            try:
                chunk = json.loads(data)
            except ValueError:
                logger.warning("the upstream of %s sent a chunk that is not JSON; skipped", turn.persona_id)
                continue
            if isinstance(chunk, dict) and "error" in chunk:
                turn.outcome = "failed"
                yield sse(chunk)
                return
            chunk["model"] = turn.persona_id
            for choice in chunk.get("choices") or []:
                if choice.get("index", 0) == 0:
                    content = (choice.get("delta") or {}).get("content")
                    if isinstance(content, str):
                        parts.append(content)
                    finished |= bool(choice.get("finish_reason"))
            if first:
                metrics.first_token_seconds.labels(turn.persona_id).observe(time.perf_counter() - started)
                first = False
            yield sse(chunk)
            if not relevance:  # the first chunk is sent: the client reads it while this runs
                relevance = True
                turns.in_background(relevance_for(turn, turns))
    except httpx.HTTPError as error:
        metrics.upstream_errors.labels(turn.persona_id).inc()
        failure = (
            f"the upstream model {turn.persona.model} at {turn.persona.resolved_base_url(turn.settings)} "
            f"broke off the reply: {type(error).__name__}: {_masked(str(error), turn.persona, turn.settings)}"
        )
        logger.warning("%s (persona %s)", failure, turn.persona_id)
        turn.outcome = "failed"
        yield sse(error_payload(failure))
        return
    finally:
        await response.aclose()
        if not relevance:  # no chunk came: the recall is shown with its relevance all the same
            turns.in_background(relevance_for(turn, turns))
    if not finished:
        metrics.upstream_errors.labels(turn.persona_id).inc()
        turn.outcome = "failed"
        yield sse(
            error_payload(f"the upstream model {turn.persona.model} ended the stream before the reply was complete")
        )
        return
    save(turn, "".join(parts), turns)  # before [DONE]: a client that leaves at [DONE] cannot cancel it
    yield b"data: [DONE]\n\n"


class RelayedStream(StreamingResponse):
    """The streamed reply (`relay_stream`) as a response. When the client leaves before the
    reply completed (Starlette cancels the stream on the disconnect), what the user said is
    saved without the partial reply; a failed upstream saves nothing (see the module docstring)."""

    def __init__(
        self,
        upstream: httpx.Response,
        turn: ChatTurn,
        turns: TurnService,
        metrics: ServeMetrics,
        started: float,
        headers: dict[str, str],
    ) -> None:
        super().__init__(
            relay_stream(upstream, turn, turns, metrics, started), media_type="text/event-stream", headers=headers
        )
        self.upstream = upstream
        self.turn = turn
        self.turns = turns

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self.turn.outcome == "pending":  # the client left: keep what the user said
                self.turn.outcome = "left"
                save(self.turn, None, self.turns)
            await self.body_iterator.aclose()  # type: ignore[attr-defined]
            await self.upstream.aclose()  # a stream that never started its relay


def save(turn: ChatTurn, reply: str | None, turns: TurnService) -> None:
    """Hand the turn to the turn service (returns at once): stored in the background, then the
    topic check and the session's title; with saving off, noted, so that a later request
    carrying it again does not store it. reply None: only what the user said (the client left
    before the reply completed)."""
    if reply is not None:
        turn.outcome = "saved"
    turns.save(turn.identity, turn.turn(reply))


def new_completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex
