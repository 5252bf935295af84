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

from memlane.store.codecs import MessageField
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
