"""The offline sample: bundled chats stored through the real store, remembered by the real graph
with the scripted memory model."""

from __future__ import annotations

from memlane.graph import MemoryStep
from memlane.store.ids import profile_entry_id
from memlane.ui.sample import SAMPLE_CHATS, SampleMemoryModel, load_sample


async def test_the_sample_fills_profile_events_titles_and_history(store, settings):
    steps: list[MemoryStep] = []

    async def on_step(step: MemoryStep) -> None:
        steps.append(step)

    loaded = await load_sample(store, settings, "maya", on_step=on_step)

    assert [result.event_id is not None for result in loaded.results] == [True, True]
    events = await store.list_events("maya")
    assert len(events) == 2 and {tuple(event.tags) for event in events} == {
        ("night shifts", "sleep", "running"),
        ("饮食", "睡眠", "宠物"),
    }
    profile = {(entry.topic, entry.subtopic): entry for entry in await store.get_profile("maya")}
    assert profile[("basic_info", "name")].content == "Maya"
    assert profile[("lifestyle", "diet")].content == "戒了咖啡，改喝绿茶"  # the Chinese chat changed it
    assert profile[("interests", "pets")].content == "上周领养了一只叫小米的橘猫"

    history = await store.profile_history("maya", profile_entry_id("maya", "lifestyle", "diet"))
    assert [revision.action for revision in history] == ["add", "update"]
    assert all(revision.actor.startswith("run:") for revision in history)
    assert history[1].before_content == "drinks a lot of black coffee without sugar"

    titles = await store.session_titles("maya")
    assert titles == {chat.session_id: chat.title for chat in SAMPLE_CHATS}
    assert (await store.get_session_summary("maya", "sample-zh")).summary.startswith("用户说戒了咖啡")
    assert await store.unprocessed_messages("maya") == []
    assert {step.step for step in steps} >= {"summarize", "extract", "merge", "tag", "persist"}

    again = await load_sample(store, settings, "maya")  # twice: nothing new
    assert again.results == [] and again.already_loaded == [chat.session_id for chat in SAMPLE_CHATS]
    assert len(await store.list_events("maya")) == 2


def test_the_scripted_model_answers_each_step():
    model = SampleMemoryModel(chat=SAMPLE_CHATS[0])
    assert '"summary": "Maya' in model.answer("summarize")
    assert '"facts"' in model.answer("extract")
    batch = model.answer(
        "merge_batch",
        "TASK: merge new facts into the user's profile.\nFact [1]\nSlot: a / b\nSlot holds: (empty)\nNew fact: x\n\n"
        "Fact [2]\nSlot: c / d\nSlot holds: old\nNew fact: new\n\nFact [3]\nSlot: e / f\nSlot holds: same\nNew fact: same",
    )
    assert batch == (
        '{"decisions": [{"fact": 1, "action": "ADD", "content": "x"}, {"fact": 2, "action": "UPDATE", "content": "new"}, '
        '{"fact": 3, "action": "ABORT", "content": ""}]}'
    )
    assert (
        model.answer("merge", "TASK: merge a new fact into the user's profile.\nSlot holds: (empty)\nNew fact: y")
        == '{"action": "ADD", "content": "y"}'
    )
    assert model.answer("tag") == '{"tags": ["night shifts", "sleep", "running"]}'
    assert model.answer("organize") == "{}"
