"""Whose fact it is, end to end (issue 22): in a group chat a careless memory model files a
friend's favourite film as the user's; after the runs the user's profile holds none of the
friend's facts, and people / 朋友A holds them."""

from __future__ import annotations

from memory_graph_helpers import add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph

FIRST_EVENING = [
    ("user", "朋友A", "我最喜欢的电影是《星际穿越》"),
    ("user", None, "我更喜欢看纪录片"),
]
A_WEEK_LATER = [
    ("user", "朋友A", "我最近在学吉他，每天练一小时。"),
    ("user", None, "我这周开始早上跑步了。"),
]
# what a careless model answers: every fact as the user's, the friend's among them
CARELESS_FIRST = [
    {"topic": "interests", "subtopic": "media", "content": "最喜欢的电影是《星际穿越》", "messages": [1]},
    {"topic": "interests", "subtopic": "media", "content": "更喜欢看纪录片", "messages": [2]},
]
CARELESS_LATER = [
    {"topic": "interests", "subtopic": "hobbies", "content": "最近在学吉他，每天练一小时", "messages": [1]},
    {"topic": "health", "subtopic": "exercise", "content": "这周开始早上跑步", "messages": [2]},
]


async def test_a_friends_facts_never_become_the_users_over_two_runs(store, make_context):
    first = await add_chat(store, "u", FIRST_EVENING, session_id="group")
    model = scripted(facts=CARELESS_FIRST)
    first_run = await run_memory_graph("u", make_context(model))
    later = await add_chat(store, "u", A_WEEK_LATER, session_id="group", start=10)
    second_run = await run_memory_graph("u", make_context(scripted(facts=CARELESS_LATER)))

    # the model read who said what
    [extract_prompt] = [prompt for prompt in model.prompts if "TASK: extract" in prompt]
    assert (
        "[1] 朋友A: 我最喜欢的电影是《星际穿越》" in extract_prompt and "[2] user: 我更喜欢看纪录片" in extract_prompt
    )

    profile = {(entry.topic, entry.subtopic): entry for entry in await store.get_profile("u")}
    friend = profile.pop(("people", "朋友A"))
    assert "《星际穿越》" in friend.content and "吉他" in friend.content
    assert friend.source_message_ids == [first[0].id, later[0].id]
    # the user's own facts, as the user said them; none the friend said
    assert {slot: entry.content for slot, entry in profile.items()} == {
        ("interests", "media"): "更喜欢看纪录片",
        ("health", "exercise"): "这周开始早上跑步",
    }
    friends_messages = {first[0].id, later[0].id}
    stored_as_the_users = [entry for entry in profile.values() if set(entry.source_message_ids) <= friends_messages]
    assert stored_as_the_users == []

    # each run says what it moved, and the timeline's profile changes name the friend's slot
    assert all(any("moved a fact only 朋友A said" in note for note in run.notes) for run in (first_run, second_run))
    [first_event] = [event for event in await store.list_events("u") if event.id == first_run.event_id]
    assert {(change.topic, change.subtopic) for change in first_event.profile_delta} == {
        ("people", "朋友A"),
        ("interests", "media"),
    }
