"""Past conversations brought in whole (memlane/importing.py, `memlane import`)."""

from __future__ import annotations

import json

import pytest
from memory_graph_helpers import make_context, profile_config  # noqa: F401  (pytest fixtures)
from scripted import ScriptedChatModel

from memlane import cli
from memlane.importing import import_messages, read_messages
from memlane.store.errors import InvalidInput
from memlane.testing import answer_from, as_json, memory_rules

JSONL = "\n".join(
    json.dumps(row, ensure_ascii=False)
    for row in [
        {"role": "user", "content": "我喜欢黑咖啡，不加糖。", "session_id": "s1", "created_at": "2024-03-01T08:00:00Z"},
        {"role": "assistant", "content": "记住了。", "session_id": "s1", "created_at": "2024-03-01T08:00:05Z"},
        {
            "role": "user",
            "name": "朋友A",
            "content": "我最喜欢的电影是《星际穿越》",
            "session_id": "s2",
            "timestamp": 1709539200,
        },
    ]
)
OPENAI = json.dumps(
    {
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {
                "role": "user",
                "content": [{"type": "text", "text": "I moved to Denver"}, {"type": "image_url", "image_url": {}}],
            },
            {"role": "assistant", "content": "Nice!"},
        ]
    }
)
LOCOMO = json.dumps(
    {
        "speakers": ["Caroline", "Mel"],
        "sessions": [
            {
                "session": "session_1",
                "date_time": "1:56 pm on 8 May, 2023",
                "turns": [
                    {"id": "D1:1", "speaker": "Caroline", "text": "I went to a support group yesterday."},
                    {"id": "D1:2", "speaker": "Mel", "text": "How was it?"},
                ],
            },
            {
                "session": "session_2",
                "date_time": "10:37 am on 27 June, 2023",
                "turns": [
                    {"id": "D2:1", "speaker": "Mel", "text": "I painted a sunrise."},
                ],
            },
        ],
    }
)


def test_the_three_shapes_are_read_with_times_speakers_and_stable_ids():
    messages = read_messages(JSONL, "u")
    assert [(m.role, m.session_id, m.name) for m in messages] == [
        ("user", "s1", None),
        ("assistant", "s1", None),
        ("user", "s2", "朋友A"),
    ]
    assert messages[0].created_at == 1709280000.0 and messages[2].created_at == 1709539200.0
    assert [m.id for m in read_messages(JSONL, "u")] == [m.id for m in messages]  # the same file, the same ids

    chat = read_messages(OPENAI, "u", session_id="trip")
    assert [(m.role, m.content) for m in chat] == [
        ("system", "You are helpful."),
        ("user", "I moved to Denver"),
        ("assistant", "Nice!"),
    ]
    assert {m.session_id for m in chat} == {"trip"} and chat[0].created_at < chat[1].created_at < chat[2].created_at

    turns = read_messages(LOCOMO, "u")
    assert [(m.id, m.name, m.session_id) for m in turns] == [
        ("D1:1", "Caroline", "session_1"),
        ("D1:2", "Mel", "session_1"),
        ("D2:1", "Mel", "session_2"),
    ]
    assert turns[1].created_at - turns[0].created_at == 1.0  # a second apart within the session
    assert read_messages(json.dumps([{"role": "user", "content": "hi"}]), "u")[0].content == "hi"


@pytest.mark.parametrize(
    "text, named",
    [
        ('{"role": "user", "content": "ok"}\nnot json', "line 2"),
        ('[{"role": "robot", "content": "beep"}]', "robot"),
        ('[{"role": "user", "content": "x", "created_at": "yesterday-ish"}]', "yesterday-ish"),
        ('{"sessions": [{"turns": "none"}]}', "session 1"),
        ('[{"role": "user", "content": "x", "id": "a\\u0000b"}]', "message 0's id holds a NUL byte"),
        ('[{"role": "user", "content": "x", "session_id": "s\\u0000"}]', "message 0's session_id holds a NUL"),
    ],
)
def test_what_cannot_be_read_is_named(text, named):
    with pytest.raises(InvalidInput, match=named):
        read_messages(text, "u")


async def test_an_import_larger_than_one_run_is_remembered_whole_oldest_first(store, make_context):
    lines = [{"role": "user", "content": "我喜欢黑咖啡，不加糖。", "session_id": "day1", "created_at": 1_700_000_000}]
    lines += [
        {
            "role": "user" if i % 2 else "assistant",
            "content": f"第{i}句：" + "今天的天气和工作都很一般。" * 8,
            "session_id": f"day{2 + i // 10}",
            "created_at": 1_700_000_100 + i,
        }
        for i in range(40)
    ]
    messages = read_messages("\n".join(json.dumps(line, ensure_ascii=False) for line in lines), "u")

    def facts(prompt: str) -> str:
        coffee = {
            "topic": "lifestyle",
            "subtopic": "drink",
            "content": "喜欢黑咖啡，不加糖",
            "confidence": 0.9,
            "messages": [1],
        }
        return as_json({"facts": [coffee] if "黑咖啡" in prompt else []})

    model = ScriptedChatModel(rules=memory_rules(facts=answer_from(facts)))
    seen: list[tuple[int, int]] = []
    added, result = await import_messages(
        store,
        "u",
        messages,
        context=make_context(model, memory_max_input_tokens=400),
        windows=lambda done, total: seen.append((done, total)),
    )
    assert added == 41 and result.windows >= 4 and result.message_count == 41
    assert await store.unprocessed_messages("u") == []  # nothing marked processed that no run read ...
    assert [entry.content for entry in await store.get_profile("u")] == [
        "喜欢黑咖啡，不加糖"
    ]  # ... the oldest fact included
    assert seen[-1] == (result.windows, result.windows)
    again, _ = await import_messages(store, "u", messages)
    assert again == 0 and len((await store.export_user("u")).messages) == 41


def test_memlane_import_from_the_command_line(settings, monkeypatch, capsys, tmp_path, fresh_settings):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "chat.jsonl"
    path.write_text(JSONL, encoding="utf-8")
    assert cli.main(["import", str(path), "--user", "carol", "--no-remember"]) == 0
    assert "3 messages read, 3 new" in capsys.readouterr().out
    assert cli.main(["import", str(path), "--user", "carol"]) == 0  # again: nothing new; no model to remember with
    captured = capsys.readouterr()
    assert "3 messages read, 0 new" in captured.out and "No chat model is configured" in captured.err
