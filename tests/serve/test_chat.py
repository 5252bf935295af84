"""serve/chat.py through `memlane serve` and the real `openai` client: what a chat request saves."""

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
    pieces = client.chat.completions.create(
        model="assistant", user="mia", messages=history, stream=True, extra_headers=session
    )
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


def stored(env, user_id: str) -> list[tuple[str, str]]:
    return [(message["role"], message["content"]) for message in export(env, user_id)["messages"]]


def test_the_same_words_said_twice_are_two_messages_and_re_sent_history_is_stored_once(env):
    client = env.openai()
    # a client that sends only its last message: "yes" twice is said twice
    first = client.chat.completions.create(model="assistant", user="yui", messages=[{"role": "user", "content": "yes"}])
    wait_for(lambda: len(export(env, "yui")["messages"]) >= 2)
    second = client.chat.completions.create(
        model="assistant", user="yui", messages=[{"role": "user", "content": "yes"}]
    )
    wait_for(lambda: len(export(env, "yui")["messages"]) >= 4, timeout=5)
    said = [
        ("user", "yes"),
        ("assistant", first.choices[0].message.content),
        ("user", "yes"),
        ("assistant", second.choices[0].message.content),
    ]
    assert stored(env, "yui") == said

    # a client that re-sends the whole history: only the new line and its reply are stored
    history = [{"role": role, "content": content} for role, content in said] + [{"role": "user", "content": "yes"}]
    third = client.chat.completions.create(model="assistant", user="yui", messages=history)
    wait_for(lambda: len(export(env, "yui")["messages"]) >= 6, timeout=5)
    time.sleep(0.3)  # a duplicate would have landed by now
    assert stored(env, "yui") == [*said, ("user", "yes"), ("assistant", third.choices[0].message.content)]


def test_a_retried_request_with_an_idempotency_key_is_stored_once(env):
    import openai
    import pytest

    line = [{"role": "user", "content": "Book the usual table"}]
    key = {"Idempotency-Key": "retry-1"}
    # the client gives up on a slow reply (the server still completes and stores it), then retries
    impatient = openai.OpenAI(base_url=env.url + "/v1", api_key="key-acme", max_retries=0, timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        impatient.chat.completions.create(model="slow", user="zed", messages=line, extra_headers=key)
    reply = env.openai().chat.completions.create(model="slow", user="zed", messages=line, extra_headers=key)
    answer = reply.choices[0].message.content
    wait_for(lambda: len(export(env, "zed")["messages"]) >= 2)
    time.sleep(1.5)  # the abandoned request's save has landed by now
    assert stored(env, "zed") == [("user", "Book the usual table"), ("assistant", answer)]

    # streamed, twice with one key: stored once; the same key in another session is another request
    for _ in range(2):
        pieces = env.openai().chat.completions.create(
            model="assistant",
            user="zed",
            messages=[{"role": "user", "content": "Again"}],
            stream=True,
            extra_headers={"Idempotency-Key": "retry-2"},
        )
        streamed = "".join(chunk.choices[0].delta.content or "" for chunk in pieces if chunk.choices)
    wait_for(lambda: len(export(env, "zed")["messages"]) >= 4)
    time.sleep(0.3)
    assert stored(env, "zed")[2:] == [("user", "Again"), ("assistant", streamed)]


def test_a_client_that_leaves_mid_stream_keeps_what_the_user_said(env):
    body = {
        "model": "slow",
        "user": "liv",
        "stream": True,
        "messages": [{"role": "user", "content": "My train leaves at 7"}],
    }
    with env.http() as http, http.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:"):
                break  # the first chunk; the client closes the connection
    wait_for(lambda: export(env, "liv")["messages"], timeout=5)
    time.sleep(1.5)  # the rest of the reply would have come by now
    assert stored(env, "liv") == [("user", "My train leaves at 7")]  # the partial reply is not kept


def test_an_idempotency_key_reused_with_another_body_answers_422_and_stores_nothing(env):
    import openai
    import pytest

    key = {"Idempotency-Key": "order-7"}
    client = env.openai()
    first = client.chat.completions.create(
        model="assistant", user="kim", messages=[{"role": "user", "content": "I moved to Lyon"}], extra_headers=key
    )
    wait_for(lambda: len(export(env, "kim")["messages"]) >= 2)
    with pytest.raises(openai.UnprocessableEntityError) as refused:  # Stripe's answer to a reused key
        client.chat.completions.create(
            model="assistant", user="kim", messages=[{"role": "user", "content": "I sold my car"}], extra_headers=key
        )
    error = refused.value.body
    assert (
        error["code"] == "idempotency_key_reused" and "'order-7'" in error["message"] and "new key" in error["message"]
    ), error
    # the same request again (streamed this time) is a retry: answered, still stored once
    again = client.chat.completions.create(
        model="assistant",
        user="kim",
        messages=[{"role": "user", "content": "I moved to Lyon"}],
        extra_headers=key,
        stream=True,
    )
    assert (
        "".join(chunk.choices[0].delta.content or "" for chunk in again if chunk.choices)
        == first.choices[0].message.content
    )
    # the same key in another session is another request
    client.chat.completions.create(
        model="assistant",
        user="kim",
        messages=[{"role": "user", "content": "I sold my car"}],
        extra_headers={**key, "X-Memlane-Session": "s2"},
    )
    wait_for(lambda: len(export(env, "kim")["messages"]) >= 4)
    time.sleep(0.5)  # a duplicate would have landed by now
    assert [content for _, content in stored(env, "kim")] == [
        "I moved to Lyon",
        "Noted: I moved to Lyon",
        "I sold my car",
        "Noted: I sold my car",
    ]
