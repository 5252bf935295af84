"""The field names of the memory hashes and of the index over them (re-exported by store/schema.py,
where every key and index memlane uses is declared)."""

from __future__ import annotations


class MemoryField:
    """Field names of the memory hashes and their index: short, as each is in every hash (before: memory_migration)."""

    ID = "mid"  # not "id": RedisVL returns the Redis key as "id"
    USER = "u"  # tags hold `user_key`/`session_key` digests, never raw ids: RediSearch splits tags on ","
    KIND = "k"
    SESSION = "s"
    USER_ID = "uid"
    SESSION_ID = "sid"
    TEXT = "t"  # as written; returned, not searched
    SEARCH_TEXT = "st"  # `store.text.index_terms` of the speaker and the text
    SEARCH_CONTEXT = "sc"  # `index_terms` of the memory's context: a ranking of its own
    LANGUAGE = "lg"  # "zh" or "en": the language the memory is written in
    SPEAKER = "sp"  # who said it, as shown ("朋友A", "Alice"); "" for the owner and the assistant
    SPEAKER_KEY = "spk"  # tag: digest of the normalized speaker name
    SPEAKER_ROLE = "spr"  # tag: "owner" (the user whose memory it is), "assistant" or "other"
    CREATED_AT = "at"
    MONTH_DAY = "md"  # MMDD of created_at in the configured zone: "April 27th" in any year
    VALID_UNTIL = "vu"  # numeric: when a newer fact replaced what it states; 0 while it holds
    EXPIRES_AT = "xa"  # numeric: when its record expires (a note's, a profile entry's); 0: never
    IMPORTANCE = "imp"  # how much it matters, 0..1 (0.5 neutral); returned, not indexed
    CONTENT_DIGEST = "cd"  # unchanged memories are not rewritten (no churn in BM25 statistics)
    SOURCES = "src"
    REF_ID = "ref"
    EMBEDDING = "v"
    ITEM = "it"  # a LangGraph store item's JSON (`base.StoreItem`); not indexed
    ITEM_VECTORS = "iv"  # an item's own vectors (float32 rows) from a LangGraph index config; not indexed
    # a LangGraph store item's index fields (store/item_fields.py): tags of every prefix of its namespace,
    # tags of its value's strings (what equality filters select), its namespace (hex, grouped), numeric updated_at
    ITEM_PREFIXES = "ip"
    ITEM_MATCH = "im"
    ITEM_NAMESPACE = "ins"
    ITEM_UPDATED = "iu"
    METADATA = "meta"  # the caller's JSON object; returned, not indexed (its declared keys are: `metadata_field`)
    UNANSWERED = "una"  # "1": an owner's question whose reply held no answer (store/redis/replies.py)


# a declared metadata field's values in its hash field (`metadata_field`) are split on this character
METADATA_TAG_SEPARATOR = "\x1f"


def metadata_field(name: str) -> str:
    """The indexed hash field of the declared metadata key `name` (`StoreSettings.metadata_fields`):
    prefixed, so that no key of the caller's can take the name of one of memlane's own fields."""
    return "meta_" + name
