"""Decisions as memories (issue 54): a decision the chat states is kept under the profile topic
"decisions", one subtopic per subject, saying what was decided and by whom, dated when it was said;
a newer decision on the same subject supersedes the older one, which stays searchable as its
earlier value with valid_until. Found for "what did we decide about…" in English and Chinese."""

from __future__ import annotations

import pytest
from memory_graph_helpers import add_chat, make_context, profile_config, scripted  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.extract import EXTRACT_PROMPT
from memlane.nodes.profile_config import DECISIONS_TOPIC
from memlane.recall import RecallParts, recall

CASES = [
    (
        ("We decided to move the launch to May.", "The team agreed: the launch moves to June after all."),
        ("the user and the team moved the launch to May", "the team moved the launch to June"),
        "launch",
        "What did we decide about the launch?",
    ),
    (
        ("我们决定把发布会推迟到五月。", "团队最后决定发布会改到六月。"),
        ("用户和团队决定把发布会推迟到五月", "团队决定把发布会改到六月"),
        "发布会",
        "我们对发布会做了什么决定？",
    ),
]


def test_the_extraction_prompt_asks_for_decisions_in_both_languages():
    assert f'topic "{DECISIONS_TOPIC}"' in EXTRACT_PROMPT
    assert "we decided to move the launch to May" in EXTRACT_PROMPT and "我们决定把发布会推迟到五月" in EXTRACT_PROMPT


@pytest.mark.parametrize(("said", "decided", "subject", "question"), CASES)
async def test_a_newer_decision_supersedes_the_older_and_both_are_found(
    store, make_context, settings, said, decided, subject, question
):
    for run, (line, content) in enumerate(zip(said, decided)):
        chat = await add_chat(store, "u", [("user", None, line)], session_id=f"s{run}")
        fact = {"topic": DECISIONS_TOPIC, "subtopic": subject, "content": content, "messages": [1]}
        # the merge model's APPEND is taken as a supersession: a subject holds one current decision
        await run_memory_graph("u", make_context(scripted(facts=[fact], merge='{"action": "APPEND", "content": ""}')))
        [entry] = [entry for entry in await store.get_profile("u") if entry.topic == DECISIONS_TOPIC]
        assert (entry.subtopic, entry.content) == (subject, content)
        assert entry.valid_from == chat[0].created_at  # when it was decided: when it was said
    hits = await store.search_memories("u", question, kinds=["profile"], limit=5)
    found = {hit.memory.text: hit.memory for hit in hits}
    current = found[f"{DECISIONS_TOPIC} / {subject}: {decided[1]}"]
    assert current.valid_until is None and current.status == "current"
    [earlier] = [memory for text, memory in found.items() if decided[0] in text]
    assert earlier.valid_until is not None and earlier.status == "earlier"  # superseded when the newer was said
    recalled = (await recall(store, "u", "s9", question, parts=RecallParts.of(settings))).text
    assert decided[1] in recalled  # what recall puts before the model: the current decision first
    assert decided[0] not in recalled or recalled.index(decided[1]) < recalled.index(decided[0])
