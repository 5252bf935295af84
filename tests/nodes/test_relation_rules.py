"""Relations by rule (nodes/relation_rules.py): templated statements in both languages become links,
a path of roles ("my sister", "我上司的女儿") resolved through what is known, questions skipped."""

from __future__ import annotations

from memlane.nodes.relation_rules import statements_from_messages, statements_in
from memlane.store.records import Message


def links(text: str, **known) -> list[tuple[str, str, str]]:
    return [(s.subject, s.predicate, s.object) for s in statements_in(text, said_at=1.0, **known).statements]


def test_english_templates():
    assert links("My sister is Bea. Bea moved to Porto.") == [("user", "sister", "Bea"), ("Bea", "lives_in", "Porto")]
    assert links("My boss's name is Tom Hardy, and I moved to New York") == [
        ("user", "boss", "Tom Hardy"),
        ("user", "lives_in", "New York"),
    ]
    assert links("My best friend is Carla; Carla works at Google") == [
        ("user", "best_friend", "Carla"),
        ("Carla", "works_at", "Google"),
    ]


def test_a_joiner_opens_a_clause_but_not_a_name():
    assert links("Andrea moved to Porto, then Sofia moved to Rome") == [
        ("Andrea", "lives_in", "Porto"),
        ("Sofia", "lives_in", "Rome"),
    ]


def test_chinese_templates_share_the_english_predicates():
    assert links("我的上司是王总。王总的女儿叫小雨，小雨住在杭州。") == [
        ("user", "boss", "王总"),
        ("王总", "daughter", "小雨"),
        ("小雨", "lives_in", "杭州"),
    ]
    assert links("王总在阿里巴巴工作") == [("王总", "works_at", "阿里巴巴")]
    assert links("我妹妹叫贝亚。我妹妹搬到了上海") == [("user", "sister", "贝亚"), ("贝亚", "lives_in", "上海")]


def test_a_path_follows_known_links_and_one_nothing_names_is_left_out_with_a_note():
    known = {("user", "boss"): "王总", ("王总", "daughter"): "小雨"}
    assert links("我上司的女儿搬到了杭州", known=known) == [("小雨", "lives_in", "杭州")]
    assert links("My sister's dog is called Rex", known={("user", "sister"): "Bea"}) == [("Bea", "dog", "Rex")]
    unknown = statements_in("My sister's dog is called Rex", said_at=1.0)
    assert unknown.statements == [] and "user → sister" in unknown.notes[0]


def test_questions_and_descriptions_are_not_links():
    assert links("Where does my sister live? 我上司的女儿叫什么？ My sister is happy. 我是老师") == []


def test_single_valued_links_are_exclusive_and_pets_are_pets():
    [home] = statements_in("Bea lives in Lisbon", said_at=1.0).statements
    [sister] = statements_in("My sister is Bea", said_at=1.0).statements
    [dog] = statements_in("我的狗叫旺财", said_at=1.0).statements
    assert home.exclusive and home.object_type == "place" and not sister.exclusive
    assert dog.predicate == "dog" and dog.object_type == "pet"


def test_messages_are_read_oldest_first_owner_only_each_from_its_message():
    messages = [
        Message(id="m2", user_id="u", session_id="s", role="user", content="My sister moved to Porto.", created_at=20),
        Message(id="m1", user_id="u", session_id="s", role="user", content="My sister is Bea.", created_at=10),
        Message(id="m3", user_id="u", session_id="s", role="assistant", content="My sister is Ana.", created_at=30),
        Message(
            id="m4", user_id="u", session_id="s", role="user", content="My boss is Tom.", created_at=40, name="Joe",
            speaker_is_owner=False,
        ),
    ]  # fmt: skip
    read = statements_from_messages(messages)
    assert [(s.subject, s.object, s.source_message_ids, s.valid_from) for s in read.statements] == [
        ("user", "Bea", ["m1"], 10),
        ("Bea", "Porto", ["m2"], 20),
    ]


def test_a_role_said_with_its_name_and_a_name_in_the_other_script_in_brackets():
    assert links("I had lunch with my sister Bea. My sister Bea moved to Porto.") == [
        ("user", "sister", "Bea"),
        ("Bea", "lives_in", "Porto"),
    ]
    assert links("我姐姐贝亚住在杭州。我的上司王总很忙") == [
        ("user", "sister", "贝亚"),
        ("user", "boss", "王总"),
        ("贝亚", "lives_in", "杭州"),
    ]
    assert statements_in("Bea (贝亚) lives in Lisbon", said_at=1.0).aliases == [("Bea", ["贝亚"])]
    assert statements_in("我姐姐贝亚（Bea）搬到了上海", said_at=1.0).aliases == [("贝亚", ["Bea"])]
    # in the same script a bracket says what a thing is; a role is no name
    for text in ("I moved to Porto (Portugal)", "my car (a Ford) broke", "My sister (贝亚) is great"):
        assert statements_in(text, said_at=1.0).aliases == []
    assert links("my sister is Bea and my friend with Tom") == [("user", "sister", "Bea")]


def test_the_messages_the_rules_read_nothing_in_are_named():
    messages = [
        Message(id="a", user_id="u", session_id="s", role="user", content="My sister is Bea.", created_at=1),
        Message(id="b", user_id="u", session_id="s", role="user", content="She got a job at Acme.", created_at=2),
    ]
    assert statements_from_messages(messages).unread == ["b"]
