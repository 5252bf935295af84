"""The owner probe: a search learns in its own round trip whether its node still holds the user.

While a search is under way (`checking_owner`), the pipelines of a node's plain client
(`NodeClient`) send `EXISTS <probe>` before their commands, the probe being a key of the
user's slot, and raise what the node said about it: MOVED (the slot is another node's now) or
ASK (it is migrating). `ShardIndexes.on_owner` (indexes.py) sets the probe around a search and
acts on those answers; a search sent as a script (search.py) names the probe as its key, which
checks the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

# the key whose slot a search's pipeline checks first (set by `ShardIndexes.on_owner` around the call)
_OWNER_PROBE: ContextVar[str | None] = ContextVar("memlane_owner_probe", default=None)


def owner_probe() -> str | None:
    """The key whose slot the search under way checks first (`on_owner` sets it; None when the search
    is answered from what a migrating slot's node holds). A search sent outside a pipeline (a
    script, store/cluster/search.py) names it as its key, which checks the same."""
    return _OWNER_PROBE.get()


@contextmanager
def checking_owner(probe: str | None) -> Iterator[None]:
    """Within it, a search's pipelines check first that their node owns `probe`'s slot (None: no check)."""
    token = _OWNER_PROBE.set(probe)
    try:
        yield
    finally:
        _OWNER_PROBE.reset(token)


class _ProbingPipeline(Pipeline):
    """A pipeline that, while `_OWNER_PROBE` is set, sends `EXISTS <probe>` before its commands and
    raises what the node said about it (MOVED: the probe's slot is another node's; ASK: it is
    migrating), so a search learns in its own round trip whether its node still holds the user."""

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        probe = _OWNER_PROBE.get()
        if probe is None or self.is_transaction or not self.command_stack:
            return await super().execute(raise_on_error)
        self.command_stack.insert(0, (("EXISTS", probe), {}))
        replies = await super().execute(raise_on_error=False)
        if isinstance(replies[0], Exception):
            raise replies[0]
        answers = replies[1:]
        if raise_on_error:
            for answer in answers:
                if isinstance(answer, Exception):
                    raise answer
        return answers


class NodeClient(aioredis.Redis):
    """A plain client of one cluster node whose pipelines check the search's owner (`_ProbingPipeline`)."""

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        return _ProbingPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
