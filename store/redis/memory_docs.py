"""A memory's hash as search and export read it back: the fields they ask (`RETURN_FIELDS`) and
the `Memory` a result holds (`memory_from_doc`)."""

from __future__ import annotations

import json
from typing import Any

from memlane.store.records import Memory
from memlane.store.redis.core import as_text
from memlane.store.schema import MemoryField

# what a search, an export and the index rebuild read of a memory's hash
RETURN_FIELDS = [
    MemoryField.ID,
    MemoryField.USER_ID,
    MemoryField.KIND,
    MemoryField.SESSION_ID,
    MemoryField.TEXT,
    MemoryField.CREATED_AT,
    MemoryField.SOURCES,
    MemoryField.REF_ID,
    MemoryField.SPEAKER,
    MemoryField.SPEAKER_ROLE,
    MemoryField.VALID_UNTIL,
    MemoryField.EXPIRES_AT,
    MemoryField.IMPORTANCE,
    MemoryField.METADATA,
    MemoryField.UNANSWERED,
]


def memory_from_doc(doc: dict[str, Any]) -> Memory:
    """The memory a search result (or a hash read with `RETURN_FIELDS`) holds."""
    return Memory(
        id=as_text(doc[MemoryField.ID]),
        user_id=as_text(doc[MemoryField.USER_ID]),
        kind=as_text(doc[MemoryField.KIND]),
        text=as_text(doc[MemoryField.TEXT]),
        session_id=as_text(doc.get(MemoryField.SESSION_ID)) or None,
        created_at=float(doc[MemoryField.CREATED_AT]),
        source_message_ids=json.loads(as_text(doc.get(MemoryField.SOURCES)) or "[]"),
        ref_id=as_text(doc.get(MemoryField.REF_ID)) or None,
        speaker=as_text(doc.get(MemoryField.SPEAKER)) or None,
        speaker_role=as_text(doc.get(MemoryField.SPEAKER_ROLE)) or "owner",
        valid_until=float(as_text(doc.get(MemoryField.VALID_UNTIL)) or 0) or None,
        expires_at=float(as_text(doc.get(MemoryField.EXPIRES_AT)) or 0) or None,
        importance=float(as_text(doc.get(MemoryField.IMPORTANCE)) or 0.5),  # unset: written before importance
        metadata=json.loads(as_text(doc.get(MemoryField.METADATA)) or "{}"),
    )
