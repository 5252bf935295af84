"""Requests the service has seen under an `Idempotency-Key`: one string per (user, key) holding a
fingerprint of the request it first came with, so a retry is told apart from a reuse of the key
for another request. Under the user's prefix (`delete_user` removes them), with an expiry.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlane.store.redis.core import StorePart, as_text


@dataclass(eq=False, repr=False)
class Requests(StorePart):
    """`claim_request_key`."""

    async def claim_request_key(self, user_id: str, key: str, fingerprint: str, *, ttl_seconds: int) -> str | None:
        # SET NX GET (Redis 7): the first request writes its fingerprint, each later one reads it,
        # in one atomic call, so two processes racing with the same key agree on the first
        earlier = await self._run(
            self.client.set(self.layout.request_key(user_id, key), fingerprint, nx=True, get=True, ex=ttl_seconds)
        )
        return as_text(earlier) if earlier is not None else None
