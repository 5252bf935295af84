"""The whole user: everything stored about one user exported, or deleted (every key under the
user's two prefixes, `schema.KeyLayout.user_prefix` and `memory_user_prefix`, and under those of
the user's agents' scopes, `store.scopes`: they share the user's hash tag).
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.crc import key_slot

from memlane.store.cluster.client import is_cluster
from memlane.store.records import ProfileEntry, UserExport
from memlane.store.redis.core import StorePart, as_text
from memlane.store.redis.events import Events
from memlane.store.redis.items import Items
from memlane.store.redis.memories import Memories
from memlane.store.redis.messages import Messages
from memlane.store.redis.profile import Profile
from memlane.store.redis.relations import Relations
from memlane.store.schema import glob_escaped
from memlane.store.scopes import scoped_user_id, split_user_id


@dataclass(eq=False, repr=False)
class Users(StorePart):
    """`export_user` and `delete_user`."""

    # what an export reads (a delete removes every key under the user's prefixes instead)
    memories: Memories
    messages: Messages
    profile: Profile
    events: Events
    items: Items
    relations: Relations

    async def _user_keys(self, user_id: str) -> list[bytes]:
        keys: list[bytes] = []
        for pattern in self.layout.user_keys_pattern(user_id):
            async for key in self.client.scan_iter(match=pattern, count=1000):
                keys.append(key)
        return keys

    async def agents(self, user_id: str) -> list[str]:
        """The agents with a scope of the user's (`store.scopes`), sorted."""
        return sorted(as_text(agent) for agent in await self._run(self.client.smembers(self.layout.scopes(user_id))))

    async def delete_user(self, user_id: str) -> int:
        """Every key of the store user; of a user, its agents' scopes too (of one agent's scope, that scope)."""
        _, agent = split_user_id(user_id)
        owners = [user_id]
        if agent is None:
            owners += [scoped_user_id(user_id, other) for other in await self.agents(user_id)]
        keys = await self._run(self._user_keys(user_id))
        removed = 0
        for start in range(0, len(keys), 500):
            removed += await self._run(self.client.unlink(*keys[start : start + 500]))
        if agent is not None:
            await self._run(self.client.srem(self.layout.scopes(user_id), agent))
        await self._run(self.client.srem(self.layout.item_owners, *owners))
        return removed

    async def reset(self) -> int:
        """Delete every key under the store's prefix: every user's memories, the shared ones, the
        registries (not the background queue's keys, which have a prefix of their own). Returns the
        keys removed. On a cluster, one UNLINK per hash slot (a command's keys share one)."""
        keys = [
            key async for key in self.client.scan_iter(match=glob_escaped(self.layout.prefix + ":") + "*", count=1000)
        ]
        batches: dict[int, list[bytes]] = {}
        for key in keys:
            batches.setdefault(key_slot(key) if is_cluster(self.client) else 0, []).append(key)
        removed = 0
        for batch in batches.values():
            for start in range(0, len(batch), 500):
                removed += await self._run(self.client.unlink(*batch[start : start + 500]))
        return removed

    async def export_user(self, user_id: str) -> UserExport:
        """Everything stored about the store user; of a user, each agent's scope in `agents`."""
        export = await self._export_one(user_id)
        if split_user_id(user_id)[1] is None:
            export.agents = {
                agent: await self._export_one(scoped_user_id(user_id, agent)) for agent in await self.agents(user_id)
            }
        return export

    async def _export_one(self, user_id: str) -> UserExport:
        members = await self._run(self.client.zrange(self.layout.timeline(user_id), 0, -1))
        sessions = await self.messages.list_sessions(user_id)
        summaries = [await self.messages.get_session_summary(user_id, session) for session in sessions]
        return UserExport(
            user_id=user_id,
            messages=await self.messages.load_messages(user_id, members),
            session_summaries=[summary for summary in summaries if summary is not None],
            session_titles=await self.messages.session_titles(user_id),
            profile=await self.profile.get_profile(user_id),
            events=await self.events.list_events(user_id, limit=1_000_000),
            memories=await self._run(self.memories.of_user(user_id)),
            cursor=await self.messages.get_cursor(user_id),
            profile_history=await self.profile.all_history(user_id),
            items=await self.items.list_items(user_id),
            held_for_review=[
                ProfileEntry.model_validate_json(raw)
                for raw in await self._run(self.client.hvals(self.layout.review(user_id)))
            ],
            entities=await self.relations.list_entities(user_id),
            relations=await self.relations.list_relations(user_id, include_past=True),
        )
