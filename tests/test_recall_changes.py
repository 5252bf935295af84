"""Current before stale with no memory run (memlane/recall_changes.py): general rules over the
search's hits and their vectors, no Redis (the vectors here are made by hand: which statements
are near each other is what the rule reads, not what an embedder says of these words)."""

from __future__ import annotations

import numpy as np
import pytest

from memlane.change_grammar import (
    adds_to,
    asks_about_the_past,
    asks_for,
    change_said,
    content_terms,
    negates,
    restates_another_value,
    says_a_change,
    says_an_end,
)
from memlane.recall import earlier_last
from memlane.recall_block import RecallItem
from memlane.recall_changes import newest_changes, states_something
from memlane.recall_select import newer_first
from memlane.store.hits import MemoryHit
from memlane.store.records import Memory
from memlane.store.text.questions import is_asking

DAY = 86_400.0


def said(
    memory_id: str,
    text: str,
    day: float,
    *,
    kind: str = "message",
    speaker: str | None = None,
    role: str | None = None,
    sources: list[str] | None = None,
    ref_id: str | None = None,
) -> Memory:
    return Memory(
        id=memory_id,
        user_id="u",
        kind=kind,
        text=text,
        created_at=day * DAY,
        speaker=speaker,
        speaker_role=role or ("other" if speaker else "owner"),
        source_message_ids=sources if sources is not None else ([memory_id] if kind == "message" else []),
        ref_id=ref_id,
    )


def hit(memory: Memory, query_similarity: float) -> MemoryHit:
    return MemoryHit(memory=memory, score=query_similarity, vector_similarity=query_similarity, text_score=0.0)


def vector(*parts: float) -> np.ndarray:
    return np.array(parts, dtype=np.float32)


# four directions: a subject (home), and three unrelated ones
HOME, FOOD, FAMILY, PETS = vector(1, 0, 0, 0), vector(0, 1, 0, 0), vector(0, 0, 1, 0), vector(0, 0, 0, 1)


def near(direction: np.ndarray, other: np.ndarray, share: float = 0.3) -> np.ndarray:
    return direction + share * other


@pytest.mark.parametrize(
    ("query", "past"),
    [
        ("Where do I live now?", False),
        ("What phone do I have?", False),
        ("我现在住在什么地方？", False),
        ("我花粉过敏吃什么药？", False),  # 过敏 is no experiential 过
        ("Where did I live before?", True),
        ("What did I say about Paris?", True),
        ("Which book was I reading on May 4th?", True),
        ("我以前住哪？", True),
        ("你给我推荐过哪些画家？", True),
        ("在5月6号我读了一本书，它的名字是？", True),
        # a question in the present: "when" asks when something is, "cut" is the base form
        ("When does my book club meet?", False),
        ("Where does my son get his hair cut?", False),
        ("When did my book club meet?", True),
        ("What did I cut my hair with?", True),
        ("When was I in Lisbon?", True),
        # a participle of a state after "are" or "get" and its subject or object; 了 of a condition
        ("What meal kit are we subscribed to?", False),
        ("Where do I get my photos printed?", False),
        ("Is Deborah married?", False),
        ("What is something Nate gave to Joanna?", True),  # a preterite, no participle
        ("孩子生病了我们带去哪看？", False),
        ("我肩颈酸了一般去哪按摩？", False),
        ("你给了我什么建议？", True),  # 了 before an object: what happened
        ("我加班饿了吃什么？", False),  # 了 before a verb that asks: a condition
        ("我昨天买了件什么衣服？", True),  # 了 before a measure of what was done
        ("我头疼了通常吃什么药？", False),  # 了 before a habitual adverb, then a verb that asks
        # a question word's "'s" is its "is"; a subject of a few words, with no clause inside it
        ("What's the spare room used for?", False),
        ("Where's my passport stored these days?", False),
        ("What is a skill that Audrey learned to take care of her dogs?", True),
        ("What did Joanna plan for her screenplay in January 2022?", True),
        ("What is Nate organizing in June 2022?", True),  # a month and a year: a date
        ("我们的年会定在什么时候？", False),  # 什么时候 of what is set
        ("我是什么时候开始学钢琴的？", True),  # 是…的: what happened
        # the present named before 了: how things stand now
        ("我现在一共攒了多少积分？", False),
        ("我一共攒了多少积分？", True),
        # "before" as an adverb asks a past, not before what it times; the 了 that ends a question is now's
        ("Which gym do I go to before work?", False),
        ("Which gym did I go to before?", True),
        ("我女儿的钢琴考到几级了？", False),
        ("累了想放松，我一般去哪？", False),  # 了 of a condition, before a verb of wanting
        ("When's my piano lesson?", False),  # "when's" is "when is"
        ("My sister asked where I park, which garage is it?", False),  # who asked is no tense of the question
        ("What is Maria's favorite song which she mentioned on 4 May, 2023?", True),
        # what was set or chosen, no time named: how it stands; a side; the present asked
        ("Which ringtone did I set for my mom?", False),
        ("What did I set the alarm to last year?", True),
        ("What's the strength of my left lens?", False),
        ("Which team have they put me on now?", False),
        ("What was I doing currently in May 2023?", True),
    ],
)
def test_a_query_about_what_happened_is_answered_as_it_is(query, past):
    assert asks_about_the_past(query) is past


@pytest.mark.parametrize(
    ("text", "change"),
    [
        ("I moved to Denver last month.", True),
        ("Treated myself to a Pixel 9 last weekend.", True),  # a past tense, no change word
        ("Work gave me a MacBook Pro.", True),
        ("上个月入手了一台iPhone 16。", True),  # the aspect 了
        ("我现在开始吃鱼了。", True),
        ("I love Thai food, especially green curry.", False),
        ("My sister's name is Anna, she lives abroad.", False),
        ("我很喜欢吃川菜，尤其是水煮鱼。", False),
        ("为了健康，我每天跑步。", False),  # 为了 is no aspect
        ("I'm mostly reading sci-fi at the moment.", True),  # the present as a time
        ("这段时间每晚都在看美剧。", True),
        ("We also adopted a kitten last spring.", False),  # what adds changes nothing by itself
        ("我们也养了一只狗。", False),
        ("上个月又领养了一只小猫。", False),
        ("We also moved the piano upstairs.", True),  # ... unless it ends or replaces something
        ("跳槽到小米了，还是做测试。", True),  # "still" keeps one thing, another changed
        ("I shop at Lidl these days, the corner store got too expensive.", True),  # "too" qualifies
        ("I started a pottery class too.", False),  # "too" closes the clause: it adds
    ],
)
def test_a_change_is_read_from_grammar_not_from_a_topic(text, change):
    assert says_a_change(text) is change


@pytest.mark.parametrize(
    ("text", "denies"),
    [("No tomatoes this year, only herbs.", True), ("氯雷他定没效果。", True), ("I grow basil.", False)],
)
def test_a_negation_is_read_from_grammar(text, denies):
    assert negates(text) is denies


def test_the_newer_word_on_what_the_query_selects_makes_the_older_one_earlier():
    old = said("old", "I live in Boston, close to the office.", 10)
    new = said("new", "I moved to Denver last month.", 40)
    hits = [
        hit(old, 0.85),
        hit(new, 0.82),
        hit(said("sister", "My sister's name is Anna, she lives abroad.", 5), 0.80),
        hit(said("food", "I love Thai food.", 12), 0.70),
        hit(said("question", "Where do I live?", 41), 0.95),  # a question states nothing
    ]
    vectors = {
        "old": near(HOME, FOOD, 0.2),
        "new": near(HOME, PETS, 0.2),
        "sister": near(FAMILY, HOME, 0.6),
        "food": FOOD,
        "question": HOME,
    }
    [change] = newest_changes("Where do I live now?", hits, vectors)
    assert change.memory.id == "new" and change.at == 40 * DAY
    assert change.stale_memory_ids == ("old",)  # not the sister's line, not the question
    assert newest_changes("Where did I live before?", hits, vectors) == []  # the past: as it is


def test_no_change_without_the_grammar_of_one_or_when_the_two_are_not_near():
    old = said("old", "I live in Boston.", 10)
    hits = [hit(old, 0.85), hit(said("again", "Boston is lovely in the autumn.", 40), 0.84)]
    assert newest_changes("Where do I live?", hits, {"old": HOME, "again": HOME + 0.1 * FOOD}) == []
    far = [hit(old, 0.85), hit(said("cat", "We adopted a cat named Milo.", 40), 0.84)]
    vectors = {"old": HOME, "cat": PETS, "x": FOOD}
    assert newest_changes("Where do I live?", [*far, hit(said("x", "I like tea.", 1), 0.5)], vectors) == []


def test_a_shared_name_pairs_two_statements_the_embedder_sees_apart():
    old = said("old", "I'm a nurse at St Mary's hospital.", 10)
    new = said("new", "I resigned from St Mary's and started at a dental clinic.", 40)
    hits = [hit(old, 0.85), hit(new, 0.60), hit(said("food", "I love Thai food.", 5), 0.7)]
    hits.append(hit(said("pets", "Our dog Biscuit is a beagle.", 6), 0.7))
    vectors = {"old": HOME, "new": near(PETS, HOME, 0.5), "food": FOOD, "pets": near(FAMILY, FOOD, 0.2)}
    [change] = newest_changes("Where do I work?", hits, vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)


def test_a_verb_done_again_names_what_it_is_done_to():
    assert "name" in content_terms("We renamed the kitten Pepper last week.")
    assert "schedul" in content_terms("They rescheduled my dentist appointment to Friday.")
    assert "ead" not in content_terms("I read a lot.")  # no verb done again
    old = said("old", "Got locker number 112 at the gym.", 10)
    new = said("new", "They renumbered everything after the remodel, mine's 40 now.", 40)
    hits = [hit(old, 0.85), hit(new, 0.70), hit(said("food", "I love Thai food.", 5), 0.72)]
    hits.append(hit(said("pets", "Our dog Biscuit is a beagle.", 6), 0.71))
    vectors = {"old": HOME, "new": near(PETS, HOME, 0.5), "food": FOOD, "pets": near(FAMILY, FOOD, 0.2)}
    [change] = newest_changes("What's my locker number?", hits, vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)


def test_only_the_same_speakers_statements_change_and_never_the_assistants():
    mine = said("mine", "I live in Leeds.", 5)
    friend_old = said("friend-old", "I live in York.", 6, speaker="Sam")
    friend_new = said("friend-new", "I moved to Hull last week.", 30, speaker="Sam")
    assistant = said("assistant", "You moved to Glasgow, then.", 31, role="assistant")
    hits = [hit(mine, 0.9), hit(friend_old, 0.9), hit(friend_new, 0.88), hit(assistant, 0.89)]
    vectors = {"mine": HOME, "friend-old": HOME, "friend-new": near(HOME, PETS, 0.1), "assistant": HOME}
    [change] = newest_changes("Where does everyone live now?", hits, vectors)
    assert change.memory.id == "friend-new" and change.stale_memory_ids == ("friend-old",)


def test_the_older_turns_card_and_profile_line_are_earlier_with_it():
    old = said("old", "I live in Boston.", 10)
    card = said("card", "The user lives in Boston.", 10, kind="event", sources=["old"])
    entry = said("profile:e1", "home / city: I live in Boston.", 10, kind="profile", sources=["old"], ref_id="e1")
    new = said("new", "I moved to Denver.", 40)
    hits = [hit(entry, 0.9), hit(card, 0.89), hit(old, 0.88), hit(new, 0.86), hit(said("f", "I like tea.", 1), 0.6)]
    vectors = {"profile:e1": HOME, "card": HOME, "old": HOME, "new": near(HOME, PETS, 0.2), "f": FOOD}
    [change] = newest_changes("Where do I live?", hits, vectors)
    assert change.memory.id == "new"
    assert set(change.stale_memory_ids) == {"old", "card"} and change.stale_profile_ids == ("e1",)


def test_the_newer_statement_takes_the_older_ones_place_whatever_its_relevance():
    old, other, new = said("old", "I live in Boston.", 1), said("x", "I like tea.", 2), said("new", "I moved.", 9)
    hits = [hit(other, 0.95), hit(old, 0.9), hit(new, 0.5)]
    passing = hits[:2]  # the move is under the floor
    assert [h.memory.id for h in newer_first(passing, hits, {"new": ["old"]})] == ["x", "new", "old"]
    assert [h.memory.id for h in newer_first(passing, hits, {})] == ["x", "old"]
    # its older statement did not pass: nothing is added (an everyday pair under the floor is no
    # answer to a request about something else)
    assert [h.memory.id for h in newer_first([hits[0]], hits, {"new": ["old"]})] == ["x"]


def test_a_turn_seen_changed_follows_its_newer_statement_and_a_replaced_one_goes_last():
    items = [
        RecallItem(layer="message", text="a", memory_id="a"),
        RecallItem(layer="message", text="replaced", memory_id="r", status="earlier"),
        RecallItem(layer="message", text="new", memory_id="new"),
        RecallItem(layer="message", text="old", memory_id="old", status="earlier"),
        RecallItem(layer="message", text="b", memory_id="b"),
    ]
    ordered = earlier_last(items, {"old": "new"})
    assert [item.memory_id for item in ordered] == ["a", "new", "old", "b", "r"]


def test_a_newer_statement_that_denies_the_older_ones_word_changes_it_without_a_change_word():
    old = said("old", "I grow tomatoes on my balcony.", 10)
    new = said("new", "The balcony is all herbs, basil and mint, no tomatoes.", 40)
    others = [said("f", "I like tea.", 1), said("p", "Our cat is called Milo.", 2)]
    hits = [hit(old, 0.9), hit(new, 0.86), hit(others[0], 0.7), hit(others[1], 0.7)]
    vectors = {"old": HOME, "new": near(FOOD, HOME, 0.6), "f": FOOD, "p": PETS}
    [change] = newest_changes("What do I grow on my balcony?", hits, vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)
    # the same words, said to add ("also"), and with no shared word denied: no change
    added = said("new", "I also started growing basil and mint.", 40)
    assert newest_changes("What do I grow?", [hit(old, 0.9), hit(added, 0.86), *hits[2:]], vectors) == []
    assert says_a_change("I started growing basil and mint.")  # without "also" it would


def test_a_newer_statement_clearly_nearer_another_earlier_one_leaves_the_selected_one_current():
    # "What pets do we have?" selects the cat; the turtle turn is the cat's nearest, but it is
    # far nearer the goldfish turn (which the query did not select): the cat stays current
    cat = said("cat", "We adopted a cat named Milo.", 12)
    fish = said("fish", "We keep two goldfish.", 10)
    turtle = said("turtle", "The goldfish are gone; we have a turtle now.", 40)
    food = said("food", "I love Thai food.", 5)
    hits = [hit(turtle, 0.83), hit(cat, 0.81), hit(fish, 0.70), hit(food, 0.6)]
    vectors = {
        "cat": near(PETS, FAMILY, 0.5),
        "fish": PETS + HOME,
        "turtle": PETS + 0.25 * FAMILY + 0.7 * HOME,
        "food": FOOD,
    }
    changes = newest_changes("What pets do we have?", hits, vectors)
    assert all("cat" not in change.stale_memory_ids for change in changes)


def test_another_number_beside_a_word_only_the_two_share_is_a_change_without_a_change_word():
    old = said("old", "I drink about 6 cups of coffee a day.", 10)
    new = said("new", "Down to 3 cups of coffee a day!", 40)
    others = [said("f", "I like Thai food.", 1), said("p", "Our cat is called Milo.", 2)]
    vectors = {"old": HOME, "new": near(HOME, FOOD, 0.4), "f": FOOD, "p": PETS}
    hits = [hit(old, 0.9), hit(new, 0.85), hit(others[0], 0.7), hit(others[1], 0.6)]
    [change] = newest_changes("How much coffee do I drink?", hits, vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)
    same = said("new", "Coffee is 6 cups a day, as ever!", 40)  # the same number: nothing changed
    assert newest_changes("How much coffee do I drink?", [hit(old, 0.9), hit(same, 0.85), *hits[2:]], vectors) == []


def test_another_number_that_says_it_adds_adds_where_the_question_asks_for_several():
    old = said("old", "I rent plot 12 at the community garden.", 10)
    new = said("new", "Picked up plot 31 too, that one is for beans.", 40)
    others = [said("f", "I like Thai food.", 1), said("p", "Our cat is called Milo.", 2)]
    vectors = {"old": HOME, "new": near(HOME, FOOD, 0.4), "f": FOOD, "p": PETS}
    hits = [hit(old, 0.9), hit(new, 0.85), hit(others[0], 0.7), hit(others[1], 0.6)]
    assert newest_changes("Which garden plots do I have?", hits, vectors) == []  # both hold
    # for one value, another number is another value, whatever "again" or "too" says
    taller = said("new", "儿子又蹿了一截，昨天量了125", 40)
    shorter = said("old", "儿子上次体检身高118", 10)
    [change] = newest_changes("我儿子多高？", [hit(shorter, 0.9), hit(taller, 0.85), *hits[2:]], vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)


def test_the_newer_statement_the_query_selects_changes_the_next_one_it_ranks_first():
    # the query selects only the newer statement (the older one 0.04 below it): the older one is
    # the next it ranks, the newer one's nearest earlier statement, and they share "deezer"
    old = said("old", "I stream music on Deezer.", 10)
    new = said("new", "Tidal is my music app now, Deezer kept skipping.", 40)
    others = [said("f", "I like Thai food.", 1), said("p", "Our cat is called Milo.", 2)]
    vectors = {"old": near(HOME, FAMILY, 0.3), "new": near(HOME, PETS, 0.3), "f": FOOD, "p": PETS}
    hits = [hit(new, 0.86), hit(old, 0.82), hit(others[0], 0.78), hit(others[1], 0.7)]
    [change] = newest_changes("Which music app do I use?", hits, vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)
    # the older one third in the query's ranking: not among its first, left as it is
    third = [hit(new, 0.86), hit(others[0], 0.84), hit(old, 0.82), hit(others[1], 0.7)]
    assert newest_changes("Which music app do I use?", third, vectors) == []


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("Which ride app do I use?", "one"),
        ("Which app do I keep my to-dos in?", "one"),  # the noun before the auxiliary
        ("What is my job?", "one"),
        ("Who walks our dog?", "one"),
        ("Where do I get my news?", "one"),
        ("How much coffee do I drink?", "one"),
        ("What bus do I take?", "one"),  # -us is singular
        ("What plants do I have?", "several"),
        ("What classes am I taking?", "several"),
        ("Who are my kids' teachers?", "several"),
        ("What kinds of music do I like?", "several"),
        ("Which bakery's bread do we order?", "one"),  # which bakery: the owner is what is asked
        ("What do I collect?", None),  # the grammar does not say
        ("我在哪家药店买药？", "one"),
        ("我在哪做志愿者？", "one"),  # 哪 alone: where
        ("我工作日几点起床？", "one"),
        ("我们家有哪些会员卡？", "several"),
        ("我都喜欢些什么运动？", "several"),
        ("我收藏什么？", None),
    ],
)
def test_a_question_asks_for_one_value_or_several_by_its_grammar(query: str, wanted: str | None):
    assert asks_for(query) == wanted


def test_a_plain_restatement_changes_a_value_only_where_the_question_asks_for_one():
    uber, lyft = "I use Uber whenever I need a ride.", "Lyft is cheaper around here so that's my go-to for rides."
    assert not says_a_change(lyft)  # no word of change
    assert restates_another_value("Which ride app do I use?", uber, lyft)
    assert not restates_another_value("What apps do I use?", uber, lyft)  # several: it may add
    assert not restates_another_value("Which ride app do I use?", uber, "I also use Lyft sometimes.")
    # the older value named again is the same value, not another one
    assert not restates_another_value("Where do I live?", "I live in Boston.", "Boston is lovely in the autumn.")
    # each names its own: the words they share besides ("back", "Dr") are not the value
    nguyen = "I see Dr. Nguyen, a chiropractor on Elm Street, once a month for my back."
    russo = "My back guy is Dr. Russo over in Maplewood, insurance covers him."
    assert restates_another_value("Who is my chiropractor?", nguyen, russo)
    assert not restates_another_value("Who is my chiropractor?", nguyen, "Dr. Nguyen fixed my back again.")


def test_for_several_values_only_an_end_or_the_old_value_named_again_changes_one():
    plants = "What plants do I have?"
    fig = "I keep a fiddle-leaf fig in the living room."
    assert not change_said(plants, fig, "Picked up two snake plants for the bedroom.")  # begins beside it: adds
    assert change_said(plants, fig, "I gave the fig away, the snake plants are all I have.")  # an end
    assert change_said("Which doctors do I see?", "My dentist is Dr. Patel.", "I see Dr. Morgan now, Patel retired.")
    assert change_said("Which doctor do I see?", fig, "Picked up two snake plants for the bedroom.")  # one: any change


def test_a_plain_restatement_changes_the_older_statement_the_query_selects():
    old = said("old", "I run NordVPN on my laptop.", 10)
    new = said("new", "My VPN is Mullvad, I pay for it in cash.", 40)
    others = [said("f", "I like Thai food.", 1), said("p", "Our cat is called Milo.", 2)]
    vectors = {"old": near(HOME, FAMILY, 0.3), "new": near(HOME, PETS, 0.3), "f": FOOD, "p": PETS}
    hits = [hit(old, 0.86), hit(new, 0.84), hit(others[0], 0.7), hit(others[1], 0.6)]
    [change] = newest_changes("Which VPN do I use?", hits, vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)
    assert newest_changes("Which VPNs do I use?", hits, vectors) == []  # several: both may hold


def test_a_plain_restatement_the_query_ranks_first_changes_the_next_when_each_is_the_others_nearest():
    # "Who am I seeing for therapy?": the newer statement first, the older one 0.036 below it (out of
    # the band that selects), no word shared; each is the other's nearest statement
    old = said("old", "I see Dr. Okafor for therapy every other week.", 10)
    new = said("new", "My therapist is Linda Chen, she does CBT and it's helping way more.", 40)
    others = [said("f", "I like Thai food.", 1), said("p", "Our cat is called Milo.", 2)]
    vectors = {"old": near(HOME, FAMILY, 0.3), "new": near(HOME, PETS, 0.3), "f": FOOD, "p": PETS}
    hits = [hit(new, 0.866), hit(old, 0.83), hit(others[0], 0.77), hit(others[1], 0.75)]
    [change] = newest_changes("Who am I seeing for therapy?", hits, vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)
    # asked for several, or with the two apart (the older one nearer another statement): as it is
    assert newest_changes("Which therapists do I see?", hits, vectors) == []
    apart = {**vectors, "f": near(HOME, FAMILY, 0.35)}
    assert newest_changes("Who am I seeing for therapy?", hits, apart) == []


@pytest.mark.parametrize(
    ("text", "adds", "ends"),
    [
        ("最近周末都去凤凰岭徒步，人少，风景也好", False, False),  # 也 of a remark about the scenery
        ("I also go to the climbing gym on Fridays.", True, False),
        ("Switched to Hoka, and I run more often too.", True, True),  # a clause the speaker is the subject of
        ("门口那个裁缝摊不做了", False, True),  # 不…了: no longer
        ("这家店不错了", False, False),
        ("我也开始学日语了", True, False),
        ("我妈也搬过来住了", True, False),  # a move toward the speaker begins something
        ("上个月搬回老家了", False, True),
        ("Started writing to a retired teacher in Lisbon, so now I have two pen friends.", True, False),  # attributive
        ("Dad signed the papers, so I'm his power of attorney as well now.", True, False),
        # what names the state it adds to, or says it is one more, in any clause
        ("Joined the choir at church, on top of the Thursday quartet.", True, False),
        ("Opened a second shop, a bakery this time, and the deli is busier than ever.", True, False),
    ],
)
def test_what_adds_is_read_in_the_statement_s_own_clauses(text, adds, ends):
    assert adds_to(text) is adds
    assert says_an_end(text) is ends


def test_the_two_statements_the_query_ranks_well_above_the_rest_are_its_pair():
    # "What streaming service do I pay for?": the two ranked first, the third 0.08 below; one of
    # the user's other statements is a little nearer the older one than the newer is (short
    # statements of one speaker sit close), so the two are not each the other's nearest
    common, a, b, c, d = np.eye(5, dtype=np.float32)
    old = said("old", "I pay for Netflix mostly for the British crime shows.", 10)
    new = said("new", "cancelled that and got Max instead, all the HBO stuff is there", 50)
    games = said("games", "I quit video games last year, too much time.", 1)
    cat = said("cat", "We adopted a cat named Milo.", 2)
    vectors = {"old": common + a, "new": common + b + 0.2 * a, "games": common + c + 0.25 * a, "cat": common + d}
    hits = [hit(old, 0.848), hit(new, 0.842), hit(games, 0.762), hit(cat, 0.71)]
    [change] = newest_changes("What streaming service do I pay for?", hits, vectors)
    assert change.memory.id == "new" and change.stale_memory_ids == ("old",)
    # the third as high as the second: the query names no pair
    close = [hit(old, 0.848), hit(new, 0.842), hit(games, 0.81), hit(cat, 0.71)]
    assert newest_changes("What streaming service do I pay for?", close, vectors) == []
    # the older one clearly nearer another statement than the newer one: no pair
    apart = {**vectors, "games": common + a + 0.1 * c}
    assert newest_changes("What streaming service do I pay for?", hits, apart) == []


@pytest.mark.parametrize(
    ("text", "asks"),
    [("空调坏了都找陈师傅，电话存着呢", False), ("你呢", True), ("他们去哪了呢？", True), ("还早着呢。", False)],
)
def test_zhe_ne_tells_and_does_not_ask(text, asks):
    assert is_asking(text) is asks


def test_what_adds_beside_the_others_is_no_change_of_several():
    godchildren = "Who are my godchildren?"
    lily = "I'm godmother to my best friend's daughter, Lily."
    theo = "My cousin asked me to be godmother to her newborn, Theo! So I've got two godkids now"
    assert adds_to(theo)  # a count grown
    assert not change_said(godchildren, lily, theo)  # "godmother" is a word of its kind, not the value again
    assert not says_an_end("Sam moved into the spare room last week.")  # moving in begins beside the others
    assert says_an_end("I moved to Denver in May.")
    assert change_said("What dentist do I see?", "I see Dr. Patel.", "I see Dr. Morgan now, Patel retired.")
    assert not adds_to("The office called us back, I'm in three days a week now.")  # a count, not a count grown


def test_a_contracted_present_is_a_present_question():
    assert not asks_about_the_past("Who looks after Biscuit when we're away?")
    assert asks_about_the_past("Who looked after Biscuit when we were away?")


@pytest.mark.parametrize(
    ("text", "adds"),
    [
        ("Opened the second box of tea, so both flavours are on the shelf.", True),
        ("There's a new kitten in the house too now.", True),
        ("两家店的账现在都归我管", True),
        ("最近又在学吉他，俩一起练", True),
        ("我俩分手了", False),
        ("Sold both of my old bikes and ride an e-bike now.", True),  # adds, yet an end still ends
    ],
)
def test_a_word_for_the_two_together_says_both_hold(text, adds):
    assert adds_to(text) is adds
    if "Sold" in text:
        assert says_a_change(text)


def test_what_a_reason_adds_is_the_reasons():
    assert not adds_to("Renamed the blog to Slow Kitchen since I write about bread too now")
    assert adds_to("Since June I volunteer at the library too")


def test_which_before_a_noun_phrase_with_signs_asks_for_several():
    assert asks_for("Which D&D campaigns am I running?") == "several"
    assert asks_for("Which 3D printer do I use?") == "one"


def test_a_statement_that_says_it_adds_adds_whatever_it_denies():
    """A negation beside a shared word reads as a change ("no tomatoes this year"), but not in a
    statement that says it adds: "…so Rex isn't alone" adds a second dog."""
    old = said("old", "We have a beagle, his name is Rex.", 10)
    new = said("new", "Adopted a second dog last week, Bella, so Rex isn't alone all day.", 50)
    cat = said("cat", "We adopted a cat named Milo.", 2)
    common, a, b = np.eye(3, dtype=np.float32)
    vectors = {"old": common + a, "new": common + 0.9 * a + 0.3 * b, "cat": common + b}
    hits = [hit(old, 0.85), hit(new, 0.83), hit(cat, 0.7)]
    assert adds_to(new.text) and negates(new.text)
    assert newest_changes("What are our dogs called?", hits, vectors) == []


@pytest.mark.parametrize(
    ("text", "states"),
    [
        (
            "our bank sold the loan to Mr. Cooper?? had to set up autopay all over again",
            True,
        ),  # a surprise, then it tells
        ("Moved to Leeds last month. Any good cafés near the station?", False),  # its last sentence asks
        ("换了个新工作。你觉得怎么样？", False),
        ("搬到杭州了？？没想到吧，上周刚搬完", True),
    ],
)
def test_a_turn_states_something_unless_its_last_sentence_asks(text, states):
    assert states_something(said("turn", text, 10)) is states
