"""store/new_messages.py and `add_new_messages`: what of a conversation a client sent again is new to
history, decided by the store (texts compared as it keeps them), in one call."""

from memlane.store.new_messages import unstored_messages
from memlane.store.records import Message


def _message(index: int, role: str, text: str, session: str = "s") -> Message:
    return Message(id=f"m{index}", user_id="u", session_id=session, role=role, content=text, created_at=float(index))


def _resent(messages: list[Message]) -> list[Message]:
    """The same conversation sent again by a client that gives its messages new ids."""
    return [m.model_copy(update={"id": "re-" + m.id}) for m in messages]


def test_messages_after_the_stored_tail_are_new():
    stored = [_message(1, "user", "hi"), _message(2, "assistant", "hello"), _message(3, "user", "I live in Lyon")]
    reply = _message(4, "assistant", "Lyon is lovely")
    assert unstored_messages([*stored, reply], stored, str) == [reply]  # by id
    assert unstored_messages([*_resent(stored), reply], stored, str) == [reply]  # re-sent without ids


def test_a_text_is_compared_as_the_store_keeps_it():
    stored = [_message(1, "user", "call me on [phone]"), _message(2, "assistant", "noted")]
    sent = [_message(1, "user", "call me on 415-555-0199"), _message(2, "assistant", "noted")]
    question = _message(3, "user", "and my mail?")

    def masked(text: str) -> str:
        return text.replace("415-555-0199", "[phone]")

    assert unstored_messages([*_resent(sent), question], stored, masked) == [question]
    assert unstored_messages([*_resent(sent), question], stored, str) == [*_resent(sent), question]


async def test_one_call_stores_what_is_new_and_says_what_it_refused(store):
    first = [_message(1, "user", "I drink black coffee"), _message(2, "assistant", "noted")]
    assert (await store.add_new_messages(first)).new == first
    too_large = _message(4, "user", "x" * (store.core.limits.max_message_chars + 1))
    conversation = [*_resent(first), _message(3, "user", "no sugar"), too_large, _message(5, "assistant", "ok")]
    saved = await store.add_new_messages(conversation)
    assert [m.id for m in saved.new] == ["m3", "m4", "m5"]
    assert [(m.id, "InputTooLarge" in why) for m, why in saved.refused] == [("m4", True)]
    kept = await store.recent_messages("u", "s", limit=10)
    assert [m.id for m in kept] == ["m1", "m2", "m3", "m5"]  # the refused one held back nothing


async def test_without_resent_every_message_is_new(store):
    first = [_message(1, "user", "ok"), _message(2, "assistant", "ok")]
    await store.add_new_messages(first, resent=False)
    again = [_message(3, "user", "ok"), _message(4, "assistant", "ok")]  # the same words, said again
    assert (await store.add_new_messages(again, resent=False)).new == again
    assert len(await store.recent_messages("u", "s", limit=10)) == 4
