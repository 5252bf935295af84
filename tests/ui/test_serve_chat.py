"""ui/serve_chat.py through `memlane serve` and the real `openai` client: what a chat request saves."""

from __future__ import annotations

import time

from test_serve import env, export, wait_for  # noqa: F401  (the served app, module-scoped)

FIRST = [
    {"role": "user", "name": "朋友A", "content": "我下个月去大理旅游"},
    {"role": "user", "content": "我也想去大理"},
    {"role": "user", "content": "顺便，我喜欢黑咖啡，不加糖。"},
]


def contents(env, user_id: str) -> list[str]:
    return [message["content"] for message in export(env, user_id)["messages"]]


def test_every_user_line_of_a_request_is_saved_and_re_sent_history_only_once(env):
    client = env.openai()
    session = {"X-Memlane-Session": "group"}
    reply = client.chat.completions.create(model="assistant", user="mia", messages=FIRST, extra_headers=session)
    answer = reply.choices[0].message.content
    wait_for(lambda: len(export(env, "mia")["messages"]) >= 4)
    assert contents(env, "mia") == [line["content"] for line in FIRST] + [answer]
    assert export(env, "mia")["messages"][0].get("name") == "朋友A"

    # the next request carries the history again (no ids), streamed this time
    history = [*FIRST, {"role": "assistant", "content": answer}, {"role": "user", "content": "大理怎么样？"}]
    pieces = client.chat.completions.create(model="assistant", user="mia", messages=history, stream=True, extra_headers=session)
    second = "".join(chunk.choices[0].delta.content or "" for chunk in pieces if chunk.choices)
    wait_for(lambda: len(export(env, "mia")["messages"]) >= 6)
    time.sleep(0.3)  # a duplicate would have landed by now
    assert contents(env, "mia") == [line["content"] for line in FIRST] + [answer, "大理怎么样？", second]


def test_a_follow_up_reply_carries_only_the_upstreams_text(env):
    client = env.openai()
    history = [
        {"role": "user", "content": "I drink black coffee"},
        {"role": "assistant", "content": "Noted: I drink black coffee"},
        {"role": "user", "content": "Why?"},
    ]
    pieces = client.chat.completions.create(model="assistant", user="ola", messages=history, stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in pieces if chunk.choices) == "Noted: Why?"
