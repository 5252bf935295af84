"""Past conversations brought in whole (memlane/importing.py, `memlane import`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from memory_graph_helpers import make_context, profile_config  # noqa: F401  (pytest fixtures)
from pydantic import ValidationError
from scripted import ScriptedChatModel

from memlane import cli
from memlane.config import get_settings
from memlane.importing import import_messages, read_file, read_messages, store_messages
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
    assert [(m.metadata["turn_id"], m.name, m.session_id) for m in turns] == [
        ("D1:1", "Caroline", "session_1"),
        ("D1:2", "Mel", "session_1"),
        ("D2:1", "Mel", "session_2"),
    ]
    assert turns[1].created_at - turns[0].created_at == 1.0  # a second apart within the session
    assert read_messages(json.dumps([{"role": "user", "content": "hi"}]), "u")[0].content == "hi"


@pytest.mark.parametrize(
    "text, named",
    [
        ('{"role": "user", "content": "ok"}\nnot json', "line 2 is not JSON"),
        ('{"role": "user", "content": "ok"}\n{"role": "robot", "content": "beep"}', "line 2 has the role 'robot'"),
        (
            '\n[\n{"role": "user", "content": "hi"},\n{"role": "robot", "content": "x"}\n]',
            "line 4, message 1 has the role",
        ),
        ('{"messages": [\n{"role": "user" "content": "x"}\n]}', "line 2 is not JSON .Expecting ','"),
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


LOCOMO_DEV = Path("/work/shared/datasets/locomo-dev")  # kept out of the repo (its README)


def locomo_original(sessions: int, turns_per_session: int = 6) -> dict:
    """A conversation of locomo-dev (41.json) in LoCoMo's own layout (the release's locomo10.json):
    `conversation` with speaker_a, speaker_b, session_<n> and session_<n>_date_time."""
    if not (LOCOMO_DEV / "41.json").exists():
        pytest.skip("locomo-dev is not on this machine")
    reduced = json.loads((LOCOMO_DEV / "41.json").read_text(encoding="utf-8"))
    conversation: dict = {"speaker_a": reduced["speakers"][0], "speaker_b": reduced["speakers"][1]}
    for session in reduced["sessions"][:sessions]:
        conversation[f"{session['session']}_date_time"] = session["date_time"]
        conversation[session["session"]] = [
            {"speaker": turn["speaker"], "dia_id": turn["id"], "text": turn["text"]}
            for turn in session["turns"][:turns_per_session]
        ]
    return {"sample_id": "conv-41", "conversation": conversation, "qa": []}


def test_a_message_id_comes_from_what_it_is_not_from_the_file():
    lines = [
        {"role": "user", "content": "I moved to Lyon.", "session_id": "s1", "created_at": 1_700_000_000},
        {"role": "assistant", "content": "Nice!", "session_id": "s1", "created_at": 1_700_000_005},
        {"role": "user", "content": "ok", "session_id": "s1"},
        {"role": "user", "content": "ok", "session_id": "s1"},  # said twice: two messages
    ]
    whole = read_messages("\n".join(map(json.dumps, lines)), "u")
    assert len({m.id for m in whole}) == 4
    # an export that starts later in the file, with a blank line: the shared messages keep their ids
    later = read_messages("\n" + "\n".join(map(json.dumps, lines[1:2])), "u")
    assert later[0].id == next(m.id for m in whole if m.content == "Nice!")
    # the same text at another time, by another speaker, or in another session is another message
    variants = [
        {**lines[0], "created_at": 1_700_000_001},
        {**lines[0], "name": "Bob"},
        {**lines[0], "session_id": "s2"},
    ]
    assert not {m.id for m in read_messages(json.dumps(variants), "u")} & {m.id for m in whole}


async def test_importing_a_grown_export_again_stores_only_what_is_new(store, tmp_path):
    lines = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"line {i} about the garden", "created_at": 1e9 + i}
        for i in range(30)
    ]
    first = tmp_path / "export-2024-05.jsonl"
    first.write_text("\n".join(map(json.dumps, lines[:20])), encoding="utf-8")
    assert await store_messages(store, read_file(first, "grow")) == 20
    # a month later: a file of another name, holding the last 15 old lines and 10 new ones
    grown = tmp_path / "export-2024-06.jsonl"
    grown.write_text("\n".join(map(json.dumps, lines[5:])), encoding="utf-8")
    assert await store_messages(store, read_file(grown, "grow")) == 10
    history = (await store.export_user("grow")).messages
    assert sorted(m.content for m in history) == sorted(line["content"] for line in lines)


async def test_locomo_in_its_own_layout_with_the_user_speaker(store, tmp_path):
    one = locomo_original(sessions=1)
    speakers = (one["conversation"]["speaker_a"], one["conversation"]["speaker_b"])
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([one]), encoding="utf-8")
    first = read_file(path, "lc", user_speaker="John")
    assert len(first) == 6 and {m.session_id for m in first} == {"conv-41_session_1"}
    assert {(m.name, m.speaker_role) for m in first} == {("John", "owner"), ("Maria", "other")}
    assert set(speakers) == {"John", "Maria"} and first[0].metadata["turn_id"] == "D1:1"
    assert first[1].created_at - first[0].created_at == 1.0
    assert await store_messages(store, first) == 6

    two = locomo_original(sessions=2)  # the file grew by a session: only its turns are new
    path.write_text(json.dumps([two]), encoding="utf-8")
    assert await store_messages(store, read_file(path, "lc", user_speaker="John")) == 6
    stored = (await store.export_user("lc")).messages
    assert len(stored) == 12 and {m.speaker_role for m in stored if m.name == "Maria"} == {"other"}
    hits = await store.search_memories("lc", "road trip with family", kinds=["message"], speaker_roles=["owner"])
    assert hits and all(hit.memory.speaker == "John" for hit in hits)

    single = read_messages(json.dumps(two), "lc")  # one conversation alone: its sessions keep their names
    assert {m.session_id for m in single} == {"session_1", "session_2"}


@pytest.mark.parametrize(
    "text, named",
    [
        ('{"speaker": "Ann", "text": "hi"}\n{"speaker": "Bob", "text": "yo"}', "'Zed' says nothing here; name one of"),
        ('[{"sample_id": "c1", "conversation": {"speaker_a": "A"}}]', "conversation c1 has no session_<n> list"),
    ],
)
def test_a_bad_user_speaker_or_locomo_file_is_named(text, named):
    with pytest.raises(InvalidInput, match=re.escape(named)):
        read_messages(text, "u", user_speaker="Zed")


def test_a_bad_file_or_setting_is_one_sentence_without_a_traceback(
    settings, monkeypatch, capsys, tmp_path, fresh_settings
):
    for name, value in {"REDIS_URL": settings.redis_url, "MEMLANE_KEY_PREFIX": settings.key_prefix}.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "robot", "content": "beep"}\n', encoding="utf-8")
    assert cli.main(["import", str(path), "--user", "carol", "--no-remember"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlane import: {path} line 2 has the role 'robot'; use one of user, assistant")
    assert err.count("\n") == 1 and "Traceback" not in err

    assert cli.main(["import", str(tmp_path / "none.jsonl"), "--user", "carol"]) == 2
    assert "none.jsonl: no such file" in capsys.readouterr().err

    speakers = tmp_path / "chat.json"
    speakers.write_text(json.dumps(locomo_original(sessions=1)), encoding="utf-8")
    assert cli.main(["import", str(speakers), "--user", "carol", "--user-speaker", "Jon", "--no-remember"]) == 2
    assert "'Jon' says nothing here; name one of its speakers ('John', 'Maria')" in capsys.readouterr().err
    assert cli.main(["import", str(speakers), "--user", "carol", "--user-speaker", "John", "--no-remember"]) == 0
    assert "6 messages read, 6 new" in capsys.readouterr().out

    monkeypatch.setenv("MEMLANE_MAX_UNSAVED_MESSAGES", "many")
    get_settings.cache_clear()
    assert cli.main(["export", "carol"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memlane export: the setting MEMLANE_MAX_UNSAVED_MESSAGES='many' is not valid")
    assert err.count("\n") == 1
    with pytest.raises(ValidationError):  # --debug: the traceback
        cli.main(["--debug", "export", "carol"])
