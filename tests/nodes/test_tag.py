"""The tag step: normalized tags; a failure leaves them empty and the run goes on."""

from __future__ import annotations

from memory_graph_helpers import CHINESE_CHAT, add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.tag import normalize_tags


def test_normalize_trims_dedupes_and_caps():
    raw = [
        "#作息异常",
        " 工作压力 ",
        "作息异常",
        "",
        3,
        "Work Stress",
        "work stress",
        "x" * 40,
        "饮食偏好。",
        "extra",
    ]
    assert normalize_tags(raw, max_tags=4, max_chars=24) == [
        "作息异常",
        "工作压力",
        "Work Stress",
        "饮食偏好",
    ]


async def test_tags_reach_the_event(store, make_context):
    await add_chat(store, "u", CHINESE_CHAT)
    model = scripted(tags='```json\n["作息异常", "工作压力", "饮食偏好",]\n```')
    result = await run_memory_graph("u", make_context(model))
    assert (await store.list_events("u"))[0].tags == ["作息异常", "工作压力", "饮食偏好"] == result.tags


async def test_model_error_leaves_tags_empty_and_the_run_goes_on(store, make_context):
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", make_context(scripted(tags=RuntimeError("rate limited"))))
    assert result.tags == [] and len(result.added) == 3
    assert (await store.list_events("u"))[0].tags == []
    assert any(note.startswith("tag: no tags") for note in result.notes)


async def test_malformed_answer_leaves_tags_empty(store, make_context):
    await add_chat(store, "u", CHINESE_CHAT)
    result = await run_memory_graph("u", make_context(scripted(tags="作息异常、工作压力")))
    assert result.tags == [] and result.event_id and len(result.added) == 3
