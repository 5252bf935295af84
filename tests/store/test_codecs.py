"""store/codecs.py: a record written to its hash reads back as it was (the round trip every field takes)."""

from memlane.store.codecs import MessageField, message_from_hash, message_hash
from memlane.store.records import Message


def _stored(message: Message, seq: int) -> dict[str, str]:
    """The hash as Redis gives it back: the codec's fields and the storing script's seq."""
    return {**message_hash(message), MessageField.SEQ: str(seq)}


def test_a_message_reads_back_as_it_was_written():
    message = Message(
        id="m1",
        user_id="alice",
        session_id="s1",
        role="user",
        name="朋友A",
        speaker_is_owner=False,
        content="我最喜欢的电影是《星际穿越》",
        created_at=1_700_000_000.123456,
        metadata={"project": "apollo", "n": 2},
    )
    assert message_from_hash(_stored(message, 7)) == message.model_copy(update={"seq": 7})


def test_a_message_without_name_or_metadata_reads_back_without_them():
    message = Message(id="m2", user_id="bob", session_id="s", role="assistant", content="ok", created_at=1.5)
    read = message_from_hash(_stored(message, 0))
    assert read is not None
    # who said it is kept as it was decided when stored (speaker_is_owner reads back explicit)
    assert read.speaker_role == message.speaker_role == "assistant"
    same = {"speaker_is_owner"}
    assert read.model_dump(exclude=same) == message.model_copy(update={"seq": 0}).model_dump(exclude=same)
    assert read.name is None and read.metadata == {}


def test_a_forgotten_message_reads_as_nothing():
    message = Message(id="m3", user_id="bob", session_id="s", role="user", content="", created_at=2.0)
    assert message_from_hash({**_stored(message, 1), MessageField.FORGOTTEN: "1"}) is None
