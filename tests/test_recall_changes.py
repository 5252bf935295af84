"""Current before stale with no memory run (memlane/recall_changes.py): pure rules, no Redis."""

from __future__ import annotations

import pytest

from memlane.recall_changes import asked_slots, newest_changes, states_the_slot
from memlane.recall_select import newer_first
from memlane.store.hits import MemoryHit
from memlane.store.records import Memory

DAY = 86_400.0


def said(memory_id: str, text: str, day: float, *, kind: str = "message", speaker: str | None = None) -> Memory:
    role = "other" if speaker else "owner"
    return Memory(
        id=memory_id, user_id="u", kind=kind, text=text, created_at=day * DAY, speaker=speaker, speaker_role=role
    )


@pytest.mark.parametrize(
    ("query", "slots"),
    [
        ("Where do I live now?", ["home"]),
        ("我现在住在哪里？", ["home"]),
        ("Where do I work these days?", ["work"]),
        ("我在哪家公司上班？", ["work"]),
        ("Who am I dating?", ["partner"]),
        ("我现在的男朋友是谁？", ["partner"]),
        ("What do I drink in the morning?", ["diet"]),
        ("Where did I live before?", []),  # the past: the older statement is the answer
        ("我以前住哪？", []),
        ("When did I move?", []),
        ("What is the capital of Australia?", []),
    ],
)
def test_a_present_question_about_a_changing_state_names_its_slot(query, slots):
    assert [slot.name for slot in asked_slots(query)] == slots


@pytest.mark.parametrize(
    ("query", "old", "new", "other"),
    [
        (
            "Where do I live now?",
            "I live in Boston, close to the office.",
            "I moved to Denver last month, new place downtown.",
            "My sister's name is Anna, she lives abroad.",
        ),
        ("我现在住在哪里？", "我住在北京。", "我上个月搬到上海了。", "我妹妹住在成都。"),
        (
            "What do I drink now?",
            "I drink coffee every morning.",
            "I quit coffee, now I only drink green tea.",
            "I quit video games last year.",
        ),
        ("我现在在哪工作？", "我在医院当护士。", "我离职了，现在在一家药企做医学顾问。", "我同事在银行上班。"),
    ],
    ids=["en-home", "zh-home", "en-diet", "zh-work"],
)
def test_the_newest_change_makes_the_older_statement_earlier_and_nothing_else(query, old, new, other):
    memories = [
        said("old", old, 10),
        said("other", other, 12),
        said("new", new, 40),
        said("question", "Where do I live? 我住哪？", 41),
    ]
    [change] = newest_changes(query, memories)
    assert change.memory.id == "new" and change.at == 40 * DAY
    assert change.stale_memory_ids == ("old",)  # not someone else's state, not a question, not the change


def test_only_the_same_speakers_older_statements_and_the_users_profile_lines_are_stale():
    memories = [
        said("mine", "I live in Leeds.", 5),
        said("friend-old", "I live in York.", 6, speaker="Sam"),
        said("card", "The user lives in Leeds.", 7, kind="event"),
        said("friend-new", "I moved to Hull last week.", 30, speaker="Sam"),
        said("later", "I live in Leeds, love it.", 35),
    ]
    [change] = newest_changes("Where do I live now?", memories, [("entry", "home / city: Leeds", 4 * DAY)])
    assert change.memory.id == "friend-new"
    assert change.stale_memory_ids == (
        "friend-old",
        "card",
    )  # Sam's older statement (and an event card), not the user's
    assert change.stale_profile_ids == ()  # a friend's move changes no line of the user's profile

    [change] = newest_changes(
        "Where do I live now?",
        [*memories, said("move", "We relocated to Glasgow.", 50)],
        [("entry", "home / city: Leeds", 4 * DAY), ("pet", "pets / cat: a cat named Milo", 4 * DAY)],
    )
    assert change.memory.id == "move" and set(change.stale_memory_ids) == {"mine", "card", "later"}
    assert change.stale_profile_ids == ("entry",)  # the line's topic names the slot; the cat's does not


def test_no_change_no_stale():
    memories = [said("a", "I live in Leeds.", 5), said("b", "I love Thai food.", 6)]
    assert newest_changes("Where do I live now?", memories) == []
    assert newest_changes("Where did I live before?", [*memories, said("c", "I moved to Hull.", 9)]) == []


@pytest.mark.parametrize(
    ("text", "stated"),
    [
        ("我住在北京。", True),
        ("我在广州天河住了五年了。", True),
        ("我妹妹住在成都。", False),
        ("记住我的生日。", False),
        ("She lives abroad, I live in Paris.", True),
        ("She lives abroad.", False),
    ],
)
def test_a_clause_states_the_users_home_unless_someone_else_is_its_subject(text, stated):
    [home] = asked_slots("Where do I live now?")
    assert states_the_slot(text, home) is stated


def test_the_change_comes_first_whatever_its_relevance():
    memories = [said("old", "I live in Boston.", 1), said("new", "I moved to Denver.", 9)]
    hits = [
        MemoryHit(memory=memories[0], score=0.7, rank_score=0.03, vector_similarity=0.9, text_score=1.0),
        MemoryHit(memory=memories[1], score=0.08, rank_score=0.01, vector_similarity=0.8, text_score=0.0),
    ]
    passing = [hits[0]]  # the move is under the floor
    assert [hit.memory.id for hit in newer_first(passing, hits, ["new"])] == ["new", "old"]
    assert [hit.memory.id for hit in newer_first(passing, hits, [])] == ["old"]
