"""Change events for other systems (issue 54, mem0's webhooks): `memlane serve` posts each memory
change (added, updated, deleted, forgotten) to the URLs a tenant configures, signed with that
target's secret, retried with backoff through the Docket queue.

- A target (`WebhookTarget`, `[[tenants.<id>.webhooks]]` in serve's file) belongs to one tenant and
  receives only the changes of that tenant's store users: a body never carries another tenant's data.
- Each POST carries `X-Memlane-Event-Id`, `X-Memlane-Timestamp` (unix seconds, at the send) and
  `X-Memlane-Signature: v1=<hex HMAC-SHA256 of "<timestamp>.<body>" with the secret>` (`signature`;
  a receiver checks it with `verify`). A retry sends the same body and event id, signed again.
- The task carries the tenant, the target's place in its list and the body, never the secret or the
  URL: the process that takes it resolves them from its own configuration (`WebhookSender`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from memlane.graph.queue import RunQueue, register_deliverer, unregister_deliverer
from memlane.store.scopes import SHARED_USER_ID, split_user_id

logger = logging.getLogger(__name__)

# how long a delivery taken by a worker that died waits before another worker takes it
_REDELIVERY = timedelta(minutes=5)

ChangeType = Literal["memory.added", "memory.updated", "memory.deleted", "memory.forgotten"]
CHANGE_TYPES: tuple[ChangeType, ...] = ("memory.added", "memory.updated", "memory.deleted", "memory.forgotten")
EVENT_HEADER = "X-Memlane-Event-Id"
TIMESTAMP_HEADER = "X-Memlane-Timestamp"
SIGNATURE_HEADER = "X-Memlane-Signature"


class WebhookTarget(BaseModel):
    """One URL a tenant's changes are posted to."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=8, max_length=2000, description="http:// or https:// URL that receives the POSTs")
    secret: SecretStr = Field(description="the HMAC key of the signature header (16 characters or more)")
    events: list[ChangeType] = Field(default_factory=lambda: list(CHANGE_TYPES), description="which changes it gets")
    attempts: int = Field(default=8, ge=1, le=50, description="tries before a delivery is given up (logged)")
    backoff_seconds: float = Field(
        default=2.0, gt=0, le=3600, description="wait before the first retry; doubled each time, at most an hour"
    )

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"a webhook URL starts with http:// or https://, not {value[:40]!r}")
        return value

    @field_validator("secret")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 16:
            raise ValueError("a webhook secret holds 16 characters or more")
        return value


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value: "v1=" and the hex HMAC-SHA256 of "<timestamp>.<body>"."""
    digest = hmac.new(secret.encode("utf-8"), str(timestamp).encode("ascii") + b"." + body, hashlib.sha256)
    return "v1=" + digest.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, header: str, *, tolerance_seconds: float = 300.0) -> bool:
    """Whether a POST is memlane's: the signature matches and the timestamp is recent (a receiver's check)."""
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > tolerance_seconds:
        return False
    return hmac.compare_digest(signature(secret, int(timestamp), body), header)


def change_body(kind: ChangeType, store_user: str, memory: Mapping[str, Any]) -> tuple[str, str] | None:
    """(tenant, JSON body) of a change of `store_user`'s memory; None for a user outside any tenant
    (no tenant configures a URL for it). `memory`: {"id", "kind", "text"} as stored (masked)."""
    user, agent = split_user_id(store_user)
    tenant, slash, user_id = user.partition("/")
    if not slash:
        return None
    body = {
        "id": uuid.uuid4().hex,
        "type": kind,
        "created_at": time.time(),
        "tenant": tenant,
        "user_id": None if user_id == SHARED_USER_ID else user_id,
        "shared": user_id == SHARED_USER_ID,
        "agent_id": agent,
        "memory": dict(memory),
    }
    return tenant, json.dumps(body, ensure_ascii=False)


class WebhookSender:
    """Posts a body to a tenant's target, signed: what the queue's webhook task calls in this process."""

    def __init__(self, targets: Mapping[str, Sequence[WebhookTarget]], *, timeout_seconds: float = 10.0) -> None:
        self.targets = {tenant: list(found) for tenant, found in targets.items() if found}
        self._client = httpx.AsyncClient(timeout=timeout_seconds)

    def receivers(self, tenant: str, kind: ChangeType) -> list[tuple[int, WebhookTarget]]:
        """The tenant's targets (their place in its list) that take changes of this kind."""
        return [(place, target) for place, target in enumerate(self.targets.get(tenant, [])) if kind in target.events]

    async def deliver(self, tenant: str, place: int, body: str) -> None:
        """POST `body` to the tenant's target at `place`; raises when it is not answered with a 2xx."""
        targets = self.targets.get(tenant, [])
        if place >= len(targets):  # the configuration changed since it was queued: nowhere to send it
            logger.warning("a webhook delivery of tenant %s names a target no longer configured; dropped", tenant)
            return
        target = targets[place]
        sent = body.encode("utf-8")
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            EVENT_HEADER: json.loads(body)["id"],
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: signature(target.secret.get_secret_value(), timestamp, sent),
        }
        response = await self._client.post(target.url, content=sent, headers=headers)
        if not response.is_success:
            raise RuntimeError(f"{target.url} answered {response.status_code}")

    async def aclose(self) -> None:
        await self._client.aclose()


class WebhookOutbox:
    """Queues each change for its tenant's targets on a queue of its own (`name`), whose worker in
    this process delivers them through `sender`. Use as `async with`."""

    def __init__(self, name: str, url: str, sender: WebhookSender) -> None:
        self.name, self.sender = name, sender
        self.queue = RunQueue(name, url)

    async def __aenter__(self) -> WebhookOutbox:
        register_deliverer(self.name, self.sender.deliver)
        await self.queue.__aenter__()
        await self.queue.start_worker(concurrency=4, redelivery_timeout=_REDELIVERY)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.queue.__aexit__(None, None, None)
        finally:
            unregister_deliverer(self.name)
            await self.sender.aclose()

    async def emit(self, kind: ChangeType, store_user: str, memories: Sequence[Mapping[str, Any]]) -> None:
        """Queue one delivery per memory and target of the user's tenant that takes `kind`; never raises
        (a change is written already: a queue that fails is logged, the write stands)."""
        for memory in memories:
            made = change_body(kind, store_user, memory)
            if made is None:
                continue
            tenant, body = made
            for place, target in self.sender.receivers(tenant, kind):
                try:
                    await self.queue.add_webhook(tenant, place, body, target.attempts, target.backoff_seconds)
                except Exception:  # the write stands; its event is lost, and said so
                    logger.exception("could not queue the %s webhook of tenant %s", kind, tenant)


async def open_outbox(store: Any, targets: Mapping[str, Sequence[WebhookTarget]], *, settings: Any) -> WebhookOutbox:
    """The outbox of a deployment's webhooks, started: its queue beside the memory runs' (the store's
    Redis, or MEMLANE_MEMORY_DOCKET_URL), named after the key prefix, its worker in this process."""
    from memlane.graph.tasks import default_docket_url

    name = f"{settings.store.key_prefix}-webhooks"
    url = default_docket_url(store, name, store=settings.store, scheduler=settings.scheduler)
    return await WebhookOutbox(name, url, WebhookSender(targets)).__aenter__()
