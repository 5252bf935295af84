"""How a record is kept in its Redis hash: the hash's field names and the codec both ways, side by
side, so that a new field of a record is one line in each direction here (and its field in
store/records.py). A message's hash (`MessageField`, `message_hash`, `message_from_hash`); a
search memory's is written and read in store/redis/memories.py (`memory_row`, `memory_from_doc`),
beside the index schema's `MemoryField` (store/schema.py) that its hash feeds."""

from __future__ import annotations

import json
from collections.abc import Mapping

from memlane.store.records import Message


class MessageField:
    ID = "id"
    USER = "user"
    SESSION = "session"
    ROLE = "role"
    NAME = "name"
    SPEAKER_ROLE = "speaker_role"  # owner / assistant / other, fixed when stored
    CONTENT = "content"
    CREATED_AT = "created_at"
    SEQ = "seq"  # written by the script that stores a message (its place in the user's order)
    FORGOTTEN = "forgotten"  # "1": the message was forgotten; its hash is a tombstone that keeps the id taken
    METADATA = "metadata"  # the caller's JSON object ("" or absent: none)


def message_hash(message: Message) -> dict[str, str]:
    """The fields a message is stored with (its seq is the storing script's to write)."""
    return {
        MessageField.ID: message.id,
        MessageField.USER: message.user_id,
        MessageField.SESSION: message.session_id,
        MessageField.ROLE: message.role,
        MessageField.NAME: message.name or "",
        MessageField.SPEAKER_ROLE: message.speaker_role,
        MessageField.CONTENT: message.content,
        MessageField.CREATED_AT: repr(message.created_at),
        MessageField.METADATA: json.dumps(message.metadata, ensure_ascii=False) if message.metadata else "",
    }


def message_from_hash(data: Mapping[str, str]) -> Message | None:
    """The message a stored hash (decoded) holds; None for a forgotten message's tombstone."""
    if data.get(MessageField.FORGOTTEN):  # a tombstone (store/redis/messages.py `_drop_messages`)
        return None
    return Message(
        id=data[MessageField.ID],
        user_id=data[MessageField.USER],
        session_id=data[MessageField.SESSION],
        role=data[MessageField.ROLE],  # validated by the model
        name=data.get(MessageField.NAME) or None,
        speaker_is_owner=data[MessageField.SPEAKER_ROLE] == "owner" if data.get(MessageField.SPEAKER_ROLE) else None,
        content=data[MessageField.CONTENT],
        created_at=float(data[MessageField.CREATED_AT]),
        seq=int(data[MessageField.SEQ]),
        metadata=json.loads(data.get(MessageField.METADATA) or "{}"),
    )
