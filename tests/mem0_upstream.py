"""What a fake OpenAI-compatible model answers so that mem0 and memlane learn the same facts from
the same conversation (tests/test_mem0_differential.py): one table of scripted facts, each with
the words of a user message that state it, answered in each system's own prompt shape.

- mem0's extraction prompt ("You are a Memory Extractor", one call per `add`): `{"memory": [{"text": fact}]}`
  for each trigger in its "New Messages" section.
- memlane's memory graph (a prompt per step, each starting with its `TASK:` line, nodes/*.py):
  summarize and extract state the facts found in the chat's user lines (extract cites their message
  numbers); merge adds each; tag, organize and the rest answer as `memory_rules` does.
- anything else (a reply model): `CHAT_REPLY`.

`FakeUpstream(reply=scripted_reply)` serves it; its `/embeddings` gives mem0 its vectors.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from memlane.nodes.confirm_forget import CONFIRM_FORGET_PROMPT
from memlane.nodes.extract import EXTRACT_PROMPT
from memlane.nodes.llm import Step
from memlane.nodes.merge import MERGE_BATCH_PROMPT, MERGE_PROMPT
from memlane.nodes.organize import ORGANIZE_PROMPT
from memlane.nodes.resummarize import RESUMMARIZE_PROMPT
from memlane.nodes.session_summary import SESSION_SUMMARY_PROMPT, WINDOW_SUMMARY_PROMPT
from memlane.nodes.session_title import TITLE_PROMPT
from memlane.nodes.summarize import SUMMARIZE_PROMPT
from memlane.nodes.tag import TAG_PROMPT
from memlane.nodes.topic_shift import TOPIC_SHIFT_PROMPT
from memlane.testing import memory_rules

# (words of a user message, topic, subtopic, the fact): one slot per fact, so one profile entry each
FACTS = [
    ("I'm Alex", "personal", "name", "Name is Alex"),
    ("I love basketball", "interests", "sports", "Loves basketball and gaming"),
    ("planning a trip to Tokyo", "travel", "plans", "Planning a trip to Tokyo next month"),
    ("not a big fan of thriller", "movies", "dislikes", "Does not like thriller movies"),
    ("I love sci-fi", "movies", "likes", "Loves sci-fi movies"),
    ("drink coffee in the morning", "habits", "morning", "Drinks coffee in the morning and goes for a walk"),
    ("I'm vegetarian", "diet", "restrictions", "Is vegetarian and allergic to nuts"),
    ("I live in Lyon", "home", "city", "Lives in Lyon"),
]
CHAT_REPLY = "Noted."
MEM0_EXTRACTOR = "You are a Memory Extractor"
_CHAT_LINE = re.compile(r"^\[(\d+)\] ([^:\n]+): (.*)$", re.M)


def facts_in(text: str) -> list[tuple[str, str, str]]:
    """(topic, subtopic, fact) of each scripted fact whose words `text` holds."""
    lowered = text.lower()
    return [(topic, subtopic, fact) for words, topic, subtopic, fact in FACTS if words.lower() in lowered]


def fact_of(memory_text: str) -> str | None:
    """The scripted fact a memory's text states (mem0: the fact; memlane: "topic / subtopic: fact")."""
    return next((fact for *_, fact in FACTS if memory_text.endswith(fact)), None)


def _user_lines(prompt: str) -> list[tuple[int, str]]:
    return [(int(number), text) for number, who, text in _CHAT_LINE.findall(prompt) if who.startswith("user")]


def _summary(messages: list[BaseMessage]) -> str:
    found = [fact for _, text in _user_lines(str(messages[-1].content)) for *_, fact in facts_in(text)]
    return json.dumps({"summary": "; ".join(found)})


def _extract(messages: list[BaseMessage]) -> str:
    facts = [
        {
            "about": "user",
            "topic": topic,
            "subtopic": subtopic,
            "content": fact,
            "confidence": 0.9,
            "messages": [number],
        }
        for number, text in _user_lines(str(messages[-1].content))
        for topic, subtopic, fact in facts_in(text)
    ]
    return json.dumps({"facts": facts})


_STEP_ANSWERS = dict(memory_rules(summary=_summary, facts=_extract, tags=["memory"]))
_STEP_OF_PROMPT = {
    prompt.splitlines()[0]: step
    for prompt, step in (
        (SUMMARIZE_PROMPT, Step.SUMMARIZE),
        (EXTRACT_PROMPT, Step.EXTRACT),
        (MERGE_PROMPT, Step.MERGE),
        (MERGE_BATCH_PROMPT, Step.MERGE_BATCH),
        (ORGANIZE_PROMPT, Step.ORGANIZE),
        (RESUMMARIZE_PROMPT, Step.RESUMMARIZE),
        (TAG_PROMPT, Step.TAG),
        (SESSION_SUMMARY_PROMPT, Step.SESSION_SUMMARY),
        (WINDOW_SUMMARY_PROMPT, Step.WINDOW_SUMMARY),
        (TITLE_PROMPT, Step.SESSION_TITLE),
        (TOPIC_SHIFT_PROMPT, Step.TOPIC_SHIFT),
        (CONFIRM_FORGET_PROMPT, Step.CONFIRM_FORGET),
    )
}


def _mem0_extraction(user_prompt: str) -> str:
    new = user_prompt.split("## New Messages", 1)[-1].split("## Observation Date", 1)[0]
    return json.dumps({"memory": [{"text": fact} for *_, fact in facts_in(new)]})


def scripted_reply(body: dict[str, Any]) -> str:
    """The answer to one chat-completions request, by the prompt it carries."""
    messages = body.get("messages", [])
    system = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    user = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
    if MEM0_EXTRACTOR in system:
        return _mem0_extraction(user)
    step = _STEP_OF_PROMPT.get(system.strip().splitlines()[0] if system.strip() else "")
    if step is None:
        return CHAT_REPLY
    answer = _STEP_ANSWERS.get(step, "{}")
    if callable(answer):
        return str(answer([SystemMessage(content=system), HumanMessage(content=user)]))
    return str(answer)
