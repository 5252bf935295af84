"""Which messages of a conversation are new to history: a client that sends the whole conversation
again on every request (an OpenAI-compatible chat, an agent's state) gives history the messages it
already holds, by id or without ids. Pure: the history part (store/redis/messages.py) reads the
session's stored tail and passes the store's own redaction, so a text is compared as it was kept."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memlane.store.records import Message

# how many of the session's last stored messages must line up with the request's to count
# it as re-sent history (a client that sends the history again gives its messages new ids)
ALIGNED_MESSAGES = 3


@dataclass(frozen=True)
class NewMessages:
    """What `HistoryStore.add_new_messages` did: the messages it took as new, and those it could not
    store for what they hold (with why), which held back none of the others."""

    new: list[Message]
    refused: list[tuple[Message, str]] = field(default_factory=list)


def unstored_messages(
    candidates: Sequence[Message], stored: Sequence[Message], redact: Callable[[str], str]
) -> list[Message]:
    """The candidates after the last one already among `stored` (the session's newest stored
    messages, oldest first).

    Stored is a candidate whose id is stored, or a run of candidates that reads as the stored
    tail (same role and text, the text as the store keeps it: `redact`; a named line also as a
    chat shows it, "朋友A: …"): re-sent history without ids. The last candidate (the reply just
    made) is never taken for re-sent history.
    """
    if not stored or not candidates:
        return list(candidates)
    stored_ids = {message.id for message in stored}
    cut = max((index for index, message in enumerate(candidates) if message.id in stored_ids), default=-1)

    def same(candidate: Message, kept: Message) -> bool:
        if candidate.role != kept.role:
            return False
        text = " ".join(redact(candidate.content).split())
        # a group line comes back as the chat showed it, "朋友A: …", or as it was sent
        shown = [" ".join(kept.content.split())]
        if kept.name:
            shown.append(" ".join(f"{kept.name}: {kept.content}".split()))
        return text in shown

    for end in range(len(candidates) - 2, cut, -1):
        span = min(ALIGNED_MESSAGES, len(stored), end + 1)
        if all(same(candidates[end - back], stored[-1 - back]) for back in range(span)):
            cut = end
            break
    return list(candidates[cut + 1 :])
