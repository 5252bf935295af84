"""Parked runs: the dead-letter list of memory-graph runs that failed every retry, one hash per
user (run id → `ParkedRun` JSON) under the user's prefix, and the set of users that have one.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlane.store.records import ParkedRun
from memlane.store.redis.core import StorePart, as_text
from memlane.store.schema import user_key


@dataclass(eq=False, repr=False)
class ParkedRuns(StorePart):
    """Parking, listing and dropping failed runs."""

    async def park_run(self, run: ParkedRun) -> ParkedRun:
        digest = user_key(run.user_id)
        key = self.layout.parked_runs(digest)
        raw = await self._run(self.client.hget(key, run.id))
        if raw:  # parked before: one entry, its attempts added up
            earlier = ParkedRun.model_validate_json(raw)
            run = run.model_copy(
                update={"first_failed_at": earlier.first_failed_at, "attempts": earlier.attempts + run.attempts}
            )
        # two writes, never one transaction: the set is in a slot of its own on a cluster. The hash
        # first, so a lister never sees a user whose hash is not written yet (it would drop the user)
        await self._run(self.client.hset(key, run.id, run.model_dump_json()))
        await self._run(self.client.sadd(self.layout.parked_users, digest))
        return run

    async def parked_runs(self, user_id: str | None = None) -> list[ParkedRun]:
        if user_id is not None:
            digests = [user_key(user_id)]
        else:
            digests = sorted(
                as_text(digest) for digest in await self._run(self.client.smembers(self.layout.parked_users))
            )
        pipe = self.client.pipeline(transaction=False)
        for digest in digests:
            pipe.hvals(self.layout.parked_runs(digest))
        rows = await self._run(pipe.execute()) if digests else []
        if user_id is None and any(not values for values in rows):  # users deleted since they were parked
            await self._run(self.client.srem(self.layout.parked_users, *[d for d, v in zip(digests, rows) if not v]))
        runs = [ParkedRun.model_validate_json(raw) for values in rows for raw in values]
        return sorted(runs, key=lambda run: (run.first_failed_at, run.id))

    async def drop_parked_run(self, run_id: str) -> ParkedRun | None:
        digests = [as_text(digest) for digest in await self._run(self.client.smembers(self.layout.parked_users))]
        pipe = self.client.pipeline(transaction=False)
        for digest in digests:
            pipe.hget(self.layout.parked_runs(digest), run_id)
        found = await self._run(pipe.execute()) if digests else []
        for digest, raw in zip(digests, found):
            if raw and await self._run(self.client.hdel(self.layout.parked_runs(digest), run_id)):
                return ParkedRun.model_validate_json(raw)
        return None
