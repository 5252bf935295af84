"""Relation items as a signal of the registry (store/fusion.py SIGNALS "relations",
search_relations_weight): fused with search's order by the same rank fusion, off at weight 0, and
shown with the one relevance every door gives (memlane/recall_relevance.py)."""

from __future__ import annotations

from memlane.recall import RecallParts, recall
from memlane.recall_block import RecallItem
from memlane.recall_relations import with_relation_items
from memlane.recall_relevance import give_relevance
from memlane.store.fusion import SIGNALS
from memlane.store.relations import RelationStatement

DAY = 86_400.0


def items(layer: str, count: int) -> list[RecallItem]:
    return [RecallItem(layer=layer, text=f"{layer} {index}") for index in range(count)]  # type: ignore[arg-type]


def test_the_weight_places_the_links_among_searchs_hits():
    links, hits = items("relation", 12), items("event", 12)
    first = with_relation_items(hits, links, 2.0, 20)
    assert [item.layer for item in first] == ["relation"] * 12 + ["event"] * 12  # 2/(20+12) > 1/(20+1)
    even = with_relation_items(hits, links, 1.0, 20)
    assert [item.text for item in even[:4]] == ["relation 0", "event 0", "relation 1", "event 1"]
    assert with_relation_items(hits, links, 0.0, 20) == hits
    assert "relations" in SIGNALS and SIGNALS["relations"][0] == "relations_weight"


async def test_links_in_recall_carry_the_relevance_every_door_shows_and_the_signal_off_drops_them(store, settings):
    await store.record_relations(
        "sig",
        [
            RelationStatement(subject="me", predicate="sister", object="Bea", valid_from=DAY, exclusive=False),
            RelationStatement(subject="Bea", predicate="lives_in", object="Porto", valid_from=2 * DAY),
            RelationStatement(subject="me", predicate="boss", object="王总", valid_from=3 * DAY),
            RelationStatement(subject="王总", predicate="daughter", object="小雨", valid_from=4 * DAY),
        ],
    )
    for question, expected in [
        ("Where does my sister live?", ["the user → sister → Bea", "Bea → lives in → Porto"]),
        ("我上司的女儿叫什么？", ["用户 → 上司 → 王总", "王总 → 女儿 → 小雨"]),
    ]:
        recalled = await recall(store, "sig", None, question, parts=RecallParts.of(settings))
        await give_relevance(store, recalled)
        linked = [item for item in recalled.memories if item.layer == "relation"]
        assert [item.text for item in linked] == expected
        assert all(item.relevance is not None and 0.0 <= item.relevance <= 1.0 for item in linked)
        assert all(item.score == item.relevance for item in linked)
        off = RecallParts.of(settings.model_copy(update={"search_relations_weight": 0.0}))
        assert not [
            item
            for item in (await recall(store, "sig", None, question, parts=off)).memories
            if item.layer == "relation"
        ]


async def test_recall_keeps_its_memories_when_the_relations_cannot_be_read(store, settings, monkeypatch, caplog):
    """A relation read refused (a cluster slot moving, a Redis gone mid-recall) costs the links
    only: the memories search found are still recalled, and the failure is logged."""
    from memlane.store.errors import RedisUnavailable
    from memlane.store.records import Message

    await store.record_relations(
        "down", [RelationStatement(subject="me", predicate="sister", object="Bea", valid_from=DAY, exclusive=False)]
    )
    await store.add_messages(
        [
            Message(
                id="m1",
                user_id="down",
                session_id="s",
                role="user",
                content="My sister Bea moved to Porto last spring.",
            )
        ]
    )

    async def refused(*args, **kwargs):
        raise RedisUnavailable("slot 42 is moving")

    monkeypatch.setattr(store, "neighbourhood", refused)
    recalled = await recall(store, "down", None, "Where does my sister live?", parts=RecallParts.of(settings))
    assert any("Porto" in item.text for item in recalled.memories if item.layer != "relation")
    assert not [item for item in recalled.memories if item.layer == "relation"]
    assert "without their relations: slot 42 is moving" in caplog.text
