"""Every Redis key and RedisVL index memlane uses, declared once.

User ids and session ids come from users, so keys never contain them raw: they carry a hash (`user_key`,
`session_key`) and the raw ids live in fields, matched with RedisVL's escaped `Tag` filters. All of one user's
keys start with `user_prefix(...)` or `memory_user_prefix(...)`, which is how `delete_user` finds them.

Both prefixes carry the user's digest as a Redis Cluster hash tag (`memlane:u:{<digest>}:…`,
`memlane:mem:{<digest>}:…`), so every key of one user lives in one hash slot: a user's Lua scripts, transactions
and pipelines never cross slots, and the user's memories sit on the one primary whose index the user's searches
are sent to. The keys that belong to no user are few and each is used alone (never in a transaction with a
user's keys): `parked_users` (a set of digests), `item_owners` (a set of user ids), `key_layout_marker` (which
layout the keyspace is in), the once-per-keyspace upgrade markers `item_owners_adopted` and
`item_fields_adopted` and, on a cluster, `index_lock` (held while a primary's index is made). The memory
index's prefix (`memory_key_prefix`) holds every user's memory hashes, old layout and new alike, and each
primary of a cluster has its own copy of the index, named `memory_index_name` + a hash tag of one of its slots
(`shard_index_name`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from redisvl.schema import IndexSchema

from memlane.store.errors import InputTooLarge
from memlane.store.ids import check_id

# the memory hashes' field names (store/memory_fields.py), declared with the keys here
from memlane.store.memory_fields import METADATA_TAG_SEPARATOR as METADATA_TAG_SEPARATOR
from memlane.store.memory_fields import MemoryField as MemoryField
from memlane.store.memory_fields import metadata_field as metadata_field
from memlane.store.scopes import SCOPE_MARK, scoped_user_id, split_user_id

# Full text is analyzed in Python (store/text/terms.py: English stems, CJK bigrams) into its own field, indexed
# without server-side stemming; the index language names RediSearch's stop-word and tokenizer defaults only.
INDEX_LANGUAGE = "english"
INDEX_VERSION = "3"  # bumped when the index's fields change: `ensure_indexes` rebuilds an older index in place
# "3": no term offsets, created_at not sortable, the vector index's algorithm a setting (store/redis/index_shape.py)
# Bumped when key names change: `ensure_indexes` renames an older keyspace's keys in place (`KeyLayout.migrated_key`)
# and then writes this into `KeyLayout.key_layout_marker`. "2": the user's digest in keys is a hash tag ({digest}).
KEY_LAYOUT_VERSION = "2"


def _digest(value: str, length: int = 24) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:length]


def user_key(user_id: str) -> str:
    """The digest of a store user in keys and tag fields; an agent's scope of a user
    (`store.scopes`) is the user's digest, ".", and a digest of the agent."""
    user, agent = split_user_id(user_id)
    digest = _digest("user\x00" + user)
    return digest if agent is None else digest + "." + _digest("agent\x00" + agent, 16)


def session_key(session_id: str) -> str:
    return _digest("session\x00" + session_id)


def speaker_key(name: str) -> str:
    return _digest("speaker\x00" + " ".join(name.lower().split()))


def item_key(item_id: str) -> str:
    return _digest("item\x00" + item_id, 32)


def hash_tag(digest: str) -> str:
    """`digest` as a Redis Cluster hash tag: keys holding the same tag share one hash slot. A
    scope's digest ("<user>.<agent>") keeps its user's tag: `{<user>}.<agent>`."""
    user, dot, agent = digest.partition(".")
    return "{" + user + "}" + dot + agent


def glob_escaped(text: str) -> str:
    """`text` matched literally inside a SCAN pattern (a key prefix may hold `*`, `?` or `[`)."""
    return "".join("\\" + char if char in "*?[]\\" else char for char in text)


# the part of a message's key after its user's prefix, before the message's own part
_MESSAGE_PART = "msg:"


@dataclass(frozen=True)
class KeyLayout:
    """Key names under one prefix (tests use a fresh prefix each)."""

    prefix: str = "memlane"
    # user, session and message ids longer than this are refused (`Settings.max_id_chars`)
    max_id_chars: int = 1024

    def checked_id(self, value: str, what: str, *, user: bool = False) -> str:
        """`value`, or `InvalidInput` / `InputTooLarge` saying what is wrong with it (user: a store user
        id, `check_id`'s). Every id from outside reaches a key here: a bad one is refused before Redis."""
        check_id(value, what, user=user)
        if len(value) > self.max_id_chars:
            raise InputTooLarge(
                f"{what} of {len(value)} characters is longer than MEMLANE_MAX_ID_CHARS ({self.max_id_chars}); "
                "use a shorter id (a hash of a long one) or raise the setting"
            )
        return value

    def user_tag(self, user_id: str) -> str:
        """The digest of a user id in keys and tag fields (`user_key`), the id checked first."""
        return user_key(self.checked_id(user_id, "a user id", user=True))

    def session_tag(self, session_id: str) -> str:
        """The digest of a session id in keys and tag fields (`session_key`), the id checked first."""
        return session_key(self.checked_id(session_id, "a session id"))

    @property
    def memory_index_name(self) -> str:
        return f"{self.prefix}_memories"

    def shard_index_name(self, tag: str) -> str:
        """A cluster primary's memory index: the base name with a hash tag (`{123}`) of a slot the
        primary owns, since the search module refuses an index name whose slot its node does not own."""
        return self.memory_index_name + tag

    def index_lock(self, node_id: str) -> str:
        """String (expires): held by the one process making the memory index of cluster node `node_id`."""
        return f"{self.prefix}:index_lock:{node_id}"

    @property
    def memory_key_prefix(self) -> str:
        return f"{self.prefix}:mem:"

    def user_prefix(self, user_id: str) -> str:
        return self._user_digest_prefix(self.user_tag(user_id))

    def _user_digest_prefix(self, user_digest: str) -> str:
        return f"{self.prefix}:u:{hash_tag(user_digest)}:"

    def message_prefix(self, user_id: str) -> str:
        """What every message key of the user starts with: a timeline's or a session's member is the rest."""
        return self.user_prefix(user_id) + _MESSAGE_PART

    @staticmethod
    def message_under(user_prefix: str, message_id: str) -> str:
        """The key of a message, from its user's prefix (as a scan finds it) and its id."""
        return user_prefix + _MESSAGE_PART + item_key(message_id)

    def memory_user_prefix(self, user_id: str) -> str:
        return self._memory_digest_prefix(self.user_tag(user_id))

    def _memory_digest_prefix(self, user_digest: str) -> str:
        return f"{self.memory_key_prefix}{hash_tag(user_digest)}:"

    def user_keys_pattern(self, user_id: str) -> list[str]:
        """SCAN patterns of every key of the user and of the user's agents' scopes (`store.scopes`):
        the user's two prefixes up to the closing brace of the hash tag. Of an agent's scope: its keys."""
        digest = user_key(self.checked_id(user_id, "a user id", user=True))
        prefixes = (self._user_digest_prefix(digest), self._memory_digest_prefix(digest))
        if "." in digest:  # one agent's scope: its own keys only
            return [glob_escaped(prefix) + "*" for prefix in prefixes]
        return [glob_escaped(prefix[: prefix.index("}") + 1]) + "*" for prefix in prefixes]

    def scopes(self, user_id: str) -> str:
        """Set: the agents with a scope of the user's (raw agent ids), added as each scope's records
        are written, so that exporting the user can name them."""
        return self.user_prefix(split_user_id(user_id)[0]) + "scopes"

    def slot_key(self, user_id: str) -> str:
        """A key of the user (any one does: they share a slot), for finding the user's hash slot."""
        return self.user_prefix(user_id)

    @property
    def key_layout_marker(self) -> str:
        """String: the `KEY_LAYOUT_VERSION` the keyspace is in (absent: an older memlane's, or empty)."""
        return f"{self.prefix}:key_layout"

    def old_layout_patterns(self) -> list[str]:
        """SCAN patterns of the keys of layout "1" (the user's digest without braces)."""
        return [glob_escaped(f"{self.prefix}:u:") + "[0-9a-f]*", glob_escaped(self.memory_key_prefix) + "[0-9a-f]*"]

    def migrated_key(self, old_key: str) -> str | None:
        """The layout-"2" name of a layout-"1" key (`memlane:u:<digest>:…` → `memlane:u:{<digest>}:…`),
        or None for a key that is not one of them."""
        for head in (f"{self.prefix}:u:", self.memory_key_prefix):
            if old_key.startswith(head):
                digest, separator, rest = old_key[len(head) :].partition(":")
                if separator and digest and all(char in "0123456789abcdef" for char in digest):
                    return f"{head}{hash_tag(digest)}:{rest}"
        return None

    def memory(self, user_id: str, memory_id: str) -> str:
        return self.memory_of_digest(self.user_tag(user_id), memory_id)

    def memory_of_digest(self, user_digest: str, memory_id: str) -> str:
        """`memory` of the user whose `user_key` is `user_digest`."""
        # memory ids may carry a kind prefix on a checked id ("message:<id>"): no length limit
        return self._memory_digest_prefix(user_digest) + item_key(check_id(memory_id, "a memory id"))

    def message(self, user_id: str, message_id: str) -> str:
        return self.message_under(self.user_prefix(user_id), self.checked_id(message_id, "a message id"))

    def timeline(self, user_id: str) -> str:
        """Sorted set: message key suffix → per-user seq."""
        return self.user_prefix(user_id) + "timeline"

    def session_messages(self, user_id: str, session_id: str) -> str:
        return self.user_prefix(user_id) + "session:" + self.session_tag(session_id)

    def sessions(self, user_id: str) -> str:
        """Sorted set: raw session id → last activity time."""
        return self.user_prefix(user_id) + "sessions"

    # the user's relations (store/redis/relations.py, relation_index.py): each a hash
    def entities(self, user_id: str) -> str:
        """Hash: entity id → `Entity` JSON."""
        return self.user_prefix(user_id) + "entities"

    def entity_names(self, user_id: str) -> str:
        """Hash: `normalized_name` of an entity's name or alias → entity id."""
        return self.user_prefix(user_id) + "entity_names"

    def relations(self, user_id: str) -> str:
        """Hash: relation id → `Relation` JSON."""
        return self.user_prefix(user_id) + "relations"

    def entity_links(self, user_id: str) -> str:
        """Hash: the per-entity link index (store/redis/relation_index.py)."""
        return self.user_prefix(user_id) + "entity_links"

    def memory_texts(self, user_id: str) -> str:
        """Hash: digest of a memory's kind and text → the id `add_memories` stored it under, so the
        same text is stored once whatever id a second call gives it (turns are not: each is its own)."""
        return self.user_prefix(user_id) + "texts"

    def usage(self, user_id: str) -> str:
        """Hash: each record the user's quotas count (`usage_field`: the memory id, `message:<id>`,
        `event:<id>`, `profile:<entry id>`, an item's or a memory's own, after its agent's id for an
        agent's memory of the user) → the bytes of its text; kept while a quota is set
        (store/redis/quotas.py), and what was deleted or expired leaves it at the next count. One per user:
        the quotas are the user's, whatever agents' memories of the user hold (store/scopes.py)."""
        return self.user_prefix(split_user_id(user_id)[0]) + "usage"

    def usage_bytes(self, user_id: str) -> str:
        """String: the sum of `usage`'s values, moved with it in one script."""
        return self.user_prefix(split_user_id(user_id)[0]) + "usage_bytes"

    @staticmethod
    def usage_field(user_id: str, memory_id: str) -> str:
        """The field of `usage` counting the store user's record `memory_id`."""
        agent = split_user_id(user_id)[1]
        return memory_id if agent is None else f"{agent}{SCOPE_MARK}{memory_id}"

    @staticmethod
    def usage_record(user_id: str, field: str) -> tuple[str, str]:
        """(the store user, the memory id) a field of `user_id`'s `usage` counts."""
        agent, mark, memory_id = field.partition(SCOPE_MARK)
        return (
            (scoped_user_id(split_user_id(user_id)[0], agent), memory_id)
            if mark
            else (split_user_id(user_id)[0], field)
        )

    def owner(self, user_id: str) -> str:
        """String: the raw user id, written with records that may expire, so the sweep that finds the
        user's keys by their digest (`owner_scan`) knows whose they are (`memlane gc`)."""
        return self.user_prefix(user_id) + "owner"

    @property
    def owner_scan(self) -> str:
        """SCAN pattern of every user's `owner` key."""
        return glob_escaped(f"{self.prefix}:u:") + "{*:owner"  # agents' scopes too

    def unindexed_messages(self, user_id: str) -> str:
        """Set: ids of stored messages waiting for their search entry, recorded as they are
        stored (the embedder may be down, Redis may lose the entry); indexing removes them."""
        return self.unindexed_messages_of_digest(self.user_tag(user_id))

    @property
    def unindexed_messages_scan(self) -> str:
        """SCAN pattern of every user's `unindexed_messages` key."""
        before, after = self.unindexed_messages_of_digest("\0").split("\0")
        return glob_escaped(before) + "*" + glob_escaped(after.removeprefix("}"))  # an agent's scope too

    def unindexed_messages_of_digest(self, user_digest: str) -> str:
        return self._user_digest_prefix(user_digest) + "unindexed"

    def profile_history(self, user_id: str, entry_id: str) -> str:
        """List: the entry's revisions (`base.ProfileRevision` JSON), oldest first."""
        return self.user_prefix(user_id) + "profile_history:" + item_key(entry_id)

    def profile_history_entries(self, user_id: str) -> str:
        """Set: raw ids of the entries that have a history (deleted entries included)."""
        return self.user_prefix(user_id) + "profile_history_entries"

    def seq(self, user_id: str) -> str:
        return self.user_prefix(user_id) + "seq"

    def cursor(self, user_id: str) -> str:
        return self.user_prefix(user_id) + "cursor"

    def summary(self, user_id: str, session_id: str) -> str:
        return self.user_prefix(user_id) + "summary:" + self.session_tag(session_id)

    def session_titles(self, user_id: str) -> str:
        """Hash: raw session id → title."""
        return self.user_prefix(user_id) + "session_titles"

    def profile(self, user_id: str) -> str:
        """Hash: profile entry id → entry JSON."""
        return self.user_prefix(user_id) + "profile"

    def review(self, user_id: str) -> str:
        """Hash: held fact id → the `ProfileEntry` JSON it becomes once confirmed (store/redis/review.py)."""
        return self.user_prefix(user_id) + "review"

    def events(self, user_id: str) -> str:
        """Hash: event id → event JSON."""
        return self.user_prefix(user_id) + "events"

    def event_times(self, user_id: str) -> str:
        """Sorted set: event id → created_at."""
        return self.user_prefix(user_id) + "event_times"

    def items(self, user_id: str) -> str:
        """Hash: memory id of a LangGraph store item → its namespace (JSON). Fields of expired
        or deleted items are removed when the items are next listed."""
        return self.user_prefix(user_id) + "items"

    @property
    def item_registry_pattern(self) -> str:
        """SCAN pattern of every user's `items` registry."""
        return glob_escaped(f"{self.prefix}:u:") + "{*:items"  # agents' scopes too

    @staticmethod
    def digest_of_user_key(key: str) -> str:
        """The user's digest inside one of the user's keys (its hash tag, and an agent's scope after it)."""
        start = key.index("{")
        end = key.index("}", start)
        return key[start + 1 : end] + key[end + 1 :].split(":", 1)[0]

    def request_key(self, user_id: str, key: str) -> str:
        """String: the fingerprint of the request first sent with the `Idempotency-Key` `key` (expires)."""
        return self.user_prefix(user_id) + "request:" + item_key(check_id(key, "an Idempotency-Key"))

    def parked_runs(self, user_digest: str) -> str:
        """Hash: parked run id → `base.ParkedRun` JSON, of the user whose `user_key` is `user_digest`
        (under the user's prefix, so `delete_user` removes it)."""
        return self._user_digest_prefix(user_digest) + "parked"

    @property
    def parked_users(self) -> str:
        """Set: `user_key` digests of users with parked runs; a digest whose hash is gone (the user
        was deleted) is dropped when the list is next read. Not a user's key: on a cluster it lives in
        its own slot and is written after the user's parked hash, never in one transaction with it."""
        return f"{self.prefix}:parked_users"

    @property
    def item_owners(self) -> str:
        """Set: user ids that LangGraph store items were put under, so a search or a namespace
        listing that names no user finds every owner's items. Not a user's key (on a cluster, its
        own slot; added to before the user's items are written); `delete_user` removes the id."""
        return f"{self.prefix}:item_owners"

    @property
    def item_owners_adopted(self) -> str:
        """String: set once the owners of items put before `item_owners` existed were added to it."""
        return f"{self.prefix}:item_owners_adopted"

    @property
    def item_fields_adopted(self) -> str:
        """String: set once items put before their index fields (`MemoryField.ITEM_PREFIXES`…) got them."""
        return f"{self.prefix}:item_fields_adopted"


def metadata_schema_fields(metadata_fields: Mapping[str, str]) -> list[dict[str, Any]]:
    """The index fields of the declared metadata keys: tags exact (case kept, split only on
    `METADATA_TAG_SEPARATOR`), numbers for ranges."""
    return [
        {"name": metadata_field(name), "type": "numeric"}
        if kind == "numeric"
        else {
            "name": metadata_field(name),
            "type": "tag",
            "attrs": {"separator": METADATA_TAG_SEPARATOR, "case_sensitive": True},
        }
        for name, kind in metadata_fields.items()
    ]


def memory_schema(
    layout: KeyLayout,
    dims: int,
    metadata_fields: Mapping[str, str] | None = None,
    datatype: str = "float16",
    algorithm: str = "flat",
) -> IndexSchema:
    """The RedisVL schema of the vector-memory index, with the declared metadata fields (vectors: store/vectors.py;
    `algorithm`: "hnsw" or "flat", `StoreSettings.vector_index`). The index is made without term offsets and with
    no sortable created_at (store/redis/index_shape.py): no query asks a phrase, a highlight or that order."""
    return IndexSchema.from_dict(
        {
            "index": {
                "name": layout.memory_index_name,
                "prefix": layout.memory_key_prefix,
                "storage_type": "hash",
            },
            "fields": [
                {"name": MemoryField.USER, "type": "tag"},
                {"name": MemoryField.KIND, "type": "tag"},
                {"name": MemoryField.SESSION, "type": "tag"},
                {"name": MemoryField.LANGUAGE, "type": "tag"},
                {"name": MemoryField.SPEAKER_KEY, "type": "tag"},
                {"name": MemoryField.SPEAKER_ROLE, "type": "tag"},
                {"name": MemoryField.SEARCH_TEXT, "type": "text", "attrs": {"no_stem": True}},
                {"name": MemoryField.SEARCH_CONTEXT, "type": "text", "attrs": {"no_stem": True}},
                {"name": MemoryField.CREATED_AT, "type": "numeric"},
                {"name": MemoryField.MONTH_DAY, "type": "numeric"},
                {"name": MemoryField.VALID_UNTIL, "type": "numeric"},
                {"name": MemoryField.EXPIRES_AT, "type": "numeric"},
                {
                    "name": MemoryField.EMBEDDING,
                    "type": "vector",
                    "attrs": {
                        "dims": dims,
                        "algorithm": algorithm,
                        "distance_metric": "cosine",
                        "datatype": datatype,
                    },
                },
                {"name": MemoryField.ITEM_PREFIXES, "type": "tag"},
                {"name": MemoryField.ITEM_MATCH, "type": "tag"},
                {"name": MemoryField.ITEM_NAMESPACE, "type": "tag", "attrs": {"sortable": True}},
                {"name": MemoryField.ITEM_UPDATED, "type": "numeric", "attrs": {"sortable": True}},
                *metadata_schema_fields(metadata_fields or {}),
            ],
        }
    )


class QueueKeys:
    """The keys of the background-run queue (graph/queue.py) beside pydocket's own, under the
    queue's prefix (pydocket's `Docket.prefix`: the queue's name, a hash tag on a cluster, so they
    sit in the queue's slot), and the task keys runs are queued under (pydocket's dedup keys)."""

    def __init__(self, queue_prefix: str) -> None:
        self.prefix = queue_prefix

    def runs(self, user_id: str) -> str:
        """Sorted set: the task keys of the user's runs noted as queued (by any process), scored by
        when each was noted; a key leaves when its run ends, or when it has no record a minute on."""
        return f"{self.prefix}:memlane-runs:{user_id}"

    def follow_up(self, user_id: str) -> str:
        """Hash: the follow-up asked for while the user's run was under way (`session_ended`,
        `flush`, `unbounded`, `through:<seq>` fields); taken by whichever process ends the run."""
        return f"{self.prefix}:memlane-follow-up:{user_id}"

    @staticmethod
    def run_task(user_id: str, tail: str) -> str:
        """A memory run's task key: `tail` is the last buffered seq (notifying twice about one
        buffer queues one run), or a fresh token for a run that must not merge with another."""
        return f"memlane-run:{user_id}:{tail}"

    @staticmethod
    def idle_flush_task(user_id: str) -> str:
        return f"memlane-idle:{user_id}"

    @staticmethod
    def follow_up_check_task(user_id: str) -> str:
        return f"memlane-follow-up-check:{user_id}"

    @staticmethod
    def reindex_sweep_task() -> str:
        """One sweep of the unindexed messages per queue: each worker that starts replaces it."""
        return "memlane-reindex-sweep"

    @staticmethod
    def gc_sweep_task() -> str:
        """One retention sweep (`memlane gc`) per queue: each worker that starts replaces it."""
        return "memlane-gc-sweep"

    @staticmethod
    def summary_task(user_id: str, session_id: str, token: str) -> str:
        return f"memlane-summary:{user_id}:{session_id}:{token}"
