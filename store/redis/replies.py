"""What comes before a message in its session, read when the message is indexed (store/redis/
messages.py `index_messages`): the message it answers, for its search context, and whether a reply
leaves a question unanswered.

A reply that holds no answer (it only asks back or says it does not know: store/text/questions.py
`holds_no_answer`, "How many children do you have? I don't remember.", "你在哪里上班？你还没说过。")
marks the owner's question before it `MemoryField.UNANSWERED` in that question's search entry, so
search knows, without reading any reply, that the question states nothing and orders it after the
statements that may answer it (issue 48, item 2: "我在哪里上班？" for "我的工作单位是哪？", reworded,
was first in search and the statement third). Recall reads the replies itself
(memlane/recall_select.py `unanswered`); search reads only its hits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memlane.store.codecs import MessageField, message_from_hash
from memlane.store.ids import message_memory_id
from memlane.store.records import Message
from memlane.store.redis.core import as_text
from memlane.store.schema import MemoryField
from memlane.store.text.questions import holds_no_answer, is_asking

if TYPE_CHECKING:
    from memlane.store.redis.core import StorePart


@dataclass(frozen=True)
class Preceding:
    """The message before another in its session."""

    message_id: str
    content: str
    speaker_role: str


def leaves_unanswered(message: Message) -> bool:
    """An assistant's reply that holds no answer: the question before it stays unanswered."""
    return message.speaker_role == "assistant" and holds_no_answer(message.content)


async def preceding_messages(part: StorePart, messages: Sequence[Message]) -> dict[str, Preceding]:
    """Per message id: the message before it in its session (two pipelined trips)."""
    if not messages:
        return {}
    pipe = part.client.pipeline(transaction=False)
    for message in messages:
        # the member ranked just below this message's seq in its session
        pipe.zrevrangebyscore(
            part.layout.session_messages(message.user_id, message.session_id),
            f"({message.seq}",
            "-inf",
            start=0,
            num=1,
        )
    previous = await part._run(pipe.execute())
    # only the messages with one before them (no placeholder command: a cluster pipeline refuses ECHO)
    followers = [(message, members[0]) for message, members in zip(messages, previous) if members]
    if not followers:
        return {}
    pipe = part.client.pipeline(transaction=False)
    for message, member in followers:
        prefix = part.layout.message_prefix(message.user_id)
        pipe.hmget(prefix + as_text(member), [MessageField.ID, MessageField.CONTENT, MessageField.SPEAKER_ROLE])
    rows = await part._run(pipe.execute())
    found = {}
    for (message, _), row in zip(followers, rows):
        if row and row[0] is not None and as_text(row[1]).strip():
            found[message.id] = Preceding(as_text(row[0]), as_text(row[1]), as_text(row[2]))
    return found


async def mark_unanswered(part: StorePart, messages: Sequence[Message], preceding: dict[str, Preceding]) -> int:
    """Mark the owner's question before each reply of `messages` that holds no answer, in the
    question's search entry (only an entry that exists: a forgotten question's stays gone).
    Returns how many were marked."""
    asked = {
        (message.user_id, before.message_id)
        for message in messages
        if leaves_unanswered(message)
        and (before := preceding.get(message.id)) is not None
        and before.speaker_role == "owner"
        and is_asking(before.content)
    }
    if not asked:
        return 0
    keys = [part.layout.memory(user_id, message_memory_id(message_id)) for user_id, message_id in sorted(asked)]
    pipe = part.client.pipeline(transaction=False)
    for key in keys:
        pipe.exists(key)
    present = [key for key, exists in zip(keys, await part._run(pipe.execute())) if exists]
    if present:
        pipe = part.client.pipeline(transaction=False)
        for key in present:
            pipe.hset(key, MemoryField.UNANSWERED, "1")
        await part._run(pipe.execute())
    return len(present)


async def messages_around(
    part: StorePart, user_id: str, message_ids: Sequence[str], *, before: int, after: int
) -> dict[str, list[Message]]:
    """Per message id: the message with up to `before` / `after` messages of its session around it,
    in order (`message_neighbours` for many at once: four pipelined trips in all, where one call
    each took four trips of its own; recall reads a neighbourhood for up to 40 hits)."""
    ids = list(dict.fromkeys(message_ids))
    if not ids:
        return {}
    keys = [part.layout.message(user_id, message_id) for message_id in ids]
    pipe = part.client.pipeline(transaction=False)
    for key in keys:
        pipe.hget(key, MessageField.SESSION)
    sessions = await part._run(pipe.execute())
    found = [(message_id, key, as_text(session)) for message_id, key, session in zip(ids, keys, sessions) if session]
    if not found:
        return {}
    pipe = part.client.pipeline(transaction=False)
    for _, key, session in found:
        pipe.zrank(part.layout.session_messages(user_id, session), key.rsplit(":", 1)[1])
    ranks = await part._run(pipe.execute())
    placed = [(message_id, session, rank) for (message_id, _, session), rank in zip(found, ranks) if rank is not None]
    if not placed:
        return {}
    pipe = part.client.pipeline(transaction=False)
    for _, session, rank in placed:
        pipe.zrange(part.layout.session_messages(user_id, session), max(0, rank - before), rank + after)
    members = await part._run(pipe.execute())
    wanted = list(dict.fromkeys(as_text(member) for around in members for member in around))
    prefix = part.layout.message_prefix(user_id)
    pipe = part.client.pipeline(transaction=False)
    for member in wanted:
        pipe.hgetall(prefix + member)
    rows = dict(zip(wanted, await part._run(pipe.execute())))
    loaded: dict[str, Message] = {}
    for member, row in rows.items():
        message = message_from_hash({as_text(k): as_text(v) for k, v in row.items()}) if row else None
        if message is not None:
            loaded[member] = message
    return {
        message_id: [loaded[as_text(member)] for member in around if as_text(member) in loaded]
        for (message_id, _, _), around in zip(placed, members)
    }
