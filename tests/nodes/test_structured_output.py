"""JSON by schema: what a real ChatOpenAI sends a fake OpenAI-compatible server in each mode,
the fallback when the server refuses the schema, and ugly answers read as before."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fake_upstream import FakeUpstream
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from memory_graph_helpers import CHINESE_CHAT, add_chat, make_context, memory_rules, profile_config  # noqa: F401  (pytest fixtures)

from memlane.graph import run_memory_graph
from memlane.nodes.extract import ExtractOutput, ProfileFact, extract_facts
from memlane.nodes.llm import ModelCaller, ModelCallFailed, Step
from memlane.nodes.merge import MergeBatchOutput, MergeDecision, merge_facts
from memlane.nodes.profile_config import default_profile_config
from memlane.nodes.session_title import session_title
from memlane.nodes.structured_output import response_format
from memlane.nodes.summarize import SummaryOutput, summarize_chat
from memlane.nodes.tag import tag_event
from memlane.nodes.topic_shift import is_related
from memlane.store.records import Message, ProfileEntry

STEP_SCHEMAS = ["ExtractOutput", "MergeBatchOutput", "SummaryOutput", "TagOutput"]  # merge and tag run side by side
REFUSAL_LOG = "refused a JSON schema"


def _step_prompts() -> dict[str, str]:
    """The first line of each step's system prompt: all a server sees of the step
    (the step tags stay in the client)."""
    from memlane.nodes import extract, merge, organize, resummarize, session_title, summarize, tag, topic_shift

    prompts = {
        Step.TOPIC_SHIFT: topic_shift.TOPIC_SHIFT_PROMPT,
        Step.SESSION_TITLE: session_title.TITLE_PROMPT,
        Step.SUMMARIZE: summarize.SUMMARIZE_PROMPT,
        Step.EXTRACT: extract.EXTRACT_PROMPT,
        Step.MERGE: merge.MERGE_PROMPT,
        Step.MERGE_BATCH: merge.MERGE_BATCH_PROMPT,
        Step.ORGANIZE: organize.ORGANIZE_PROMPT,
        Step.RESUMMARIZE: resummarize.RESUMMARIZE_PROMPT,
        Step.TAG: tag.TAG_PROMPT,
    }
    return {prompt.splitlines()[0]: step for step, prompt in prompts.items()}


def reply_by_rules(rules: list[tuple[str, Any]]):
    """A fake-server reply answering each request as a ScriptedChatModel with `rules` would: the
    step is known by its system prompt's first line."""
    steps = _step_prompts()

    def reply(body: dict[str, Any]) -> str:
        messages: list[BaseMessage] = [
            SystemMessage(content=m["content"]) if m["role"] == "system" else HumanMessage(content=m["content"])
            for m in body["messages"]
        ]
        step = steps.get(str(messages[0].content).splitlines()[0]) if messages else None
        answer = next((answer for rule_step, answer in rules if rule_step == step), "")
        return answer(messages) if callable(answer) else answer

    return reply


def openai_model(upstream: FakeUpstream, *, streaming: bool = False) -> ChatOpenAI:
    return ChatOpenAI(
        model="fake-memory-model", api_key="test", base_url=upstream.url, max_retries=0, streaming=streaming
    )


def schemas_sent(upstream: FakeUpstream) -> list[str | None]:
    """The schema name each request carried, None for a request without one."""
    return [(body.get("response_format") or {}).get("json_schema", {}).get("name") for body in upstream.requests]


def said(content: str, number: int = 1) -> Message:
    return Message(id=f"m{number}", user_id="u", session_id="s", role="user", content=content)


# --- what is sent ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "json_schema"])
async def test_a_run_sends_each_step_its_schema(store, make_context, mode):
    with FakeUpstream(reply=reply_by_rules(memory_rules())) as upstream:
        await add_chat(store, "u", CHINESE_CHAT)
        result = await run_memory_graph("u", make_context(openai_model(upstream), memory_model_structured_output=mode))
    assert len(result.added) == 3 and result.tags == ["作息异常", "工作压力", "饮食偏好"]
    assert sorted(schemas_sent(upstream)) == STEP_SCHEMAS
    merge = [body for body in upstream.requests if "TASK: merge" in body["messages"][0]["content"]]
    assert merge[0]["response_format"] == response_format(MergeBatchOutput)


async def test_the_schema_is_in_openai_strict_form(settings):
    with FakeUpstream(reply='{"facts": []}') as upstream:
        caller = ModelCaller(openai_model(upstream), settings.models, "extract")
        await caller.ask("TASK: extract", "<chat>\n</chat>", schema=ExtractOutput)
    sent = upstream.requests[0]["response_format"]["json_schema"]
    assert sent["name"] == "ExtractOutput" and sent["strict"] is True
    fact = sent["schema"]["properties"]["facts"]["items"]
    # strict mode: every property required, none beyond them, no $ref/default/minLength
    assert fact["required"] == ["about", "topic", "subtopic", "content", "confidence", "importance", "messages"]
    assert fact["properties"]["importance"] == {"type": "number"}  # how much it matters (issue 54)
    assert fact["properties"]["about"] == {"type": "string"}  # whose fact: "user" or a person's name
    assert fact["additionalProperties"] is False and sent["schema"]["additionalProperties"] is False
    assert fact["properties"]["confidence"] == {"type": "number"} and fact["properties"]["topic"] == {"type": "string"}
    assert "$defs" not in sent["schema"]
    decision = response_format(MergeDecision)["json_schema"]["schema"]
    assert decision["properties"]["action"] == {"type": "string", "enum": ["ADD", "UPDATE", "APPEND", "ABORT"]}


async def test_the_chat_apps_calls_send_their_schemas_too(settings):
    answers = {"topic_shift": '{"related": false}', "session_title": '{"title": "周末去杭州的计划"}'}
    with FakeUpstream(reply=reply_by_rules(list(answers.items()))) as upstream:
        model = openai_model(upstream)
        assert await is_related(model, "用户计划周末去杭州玩两天。", said("帮我算一下税"), settings.models) is False
        assert await session_title(model, [said("周末想去杭州玩，有什么推荐？")], settings.models) == "周末去杭州的计划"
    assert schemas_sent(upstream) == ["TopicShiftOutput", "TitleOutput"]


async def test_off_sends_no_schema(store, make_context):
    with FakeUpstream(reply=reply_by_rules(memory_rules())) as upstream:
        await add_chat(store, "u", CHINESE_CHAT)
        result = await run_memory_graph("u", make_context(openai_model(upstream), memory_model_structured_output="off"))
    assert len(result.added) == 3
    assert len(upstream.requests) == 4 and schemas_sent(upstream) == [None] * 4
    assert all("response_format" not in body for body in upstream.requests)


# --- a server that refuses the schema ----------------------------------------------------------


async def test_auto_falls_back_for_good_when_the_server_refuses_the_schema(store, make_context, caplog):
    with FakeUpstream(reply=reply_by_rules(memory_rules()), refuse_json_schema=True) as upstream:
        model = openai_model(upstream)
        context = make_context(model)
        await add_chat(store, "u", CHINESE_CHAT)
        with caplog.at_level(logging.WARNING, logger="memlane.nodes.structured_output"):
            result = await run_memory_graph("u", context)
            await add_chat(store, "u", CHINESE_CHAT, start=10)
            await run_memory_graph("u", context)  # a later run on the same model: no schema either
        assert len(result.added) == 3 and result.summary
        # summarize was refused, then asked again without the schema; no request after it had one
        assert schemas_sent(upstream)[:2] == ["SummaryOutput", None]
        assert schemas_sent(upstream)[2:] == [None] * (len(upstream.requests) - 2)
        assert result.model_calls == 4  # the refused request is no call of its own
        assert context.model_breaker.consecutive_failures == 0 and context.model_breaker.state == "closed"
        refusals = [record.getMessage() for record in caplog.records if REFUSAL_LOG in record.getMessage()]
        assert len(refusals) == 1
        assert "summarize" in refusals[0] and "response_format json_schema is not supported" in refusals[0]

        # remembered for that model object: another one is still offered the schema
        caller = ModelCaller(openai_model(upstream), context.models, "summarize")
        await caller.ask("TASK: summarize", "<chat>\n</chat>", schema=SummaryOutput)
        assert schemas_sent(upstream)[-2:] == ["SummaryOutput", None]


async def test_json_schema_mode_reports_a_refusal_as_a_model_error(settings):
    with FakeUpstream(reply='{"summary": "x"}', refuse_json_schema=True) as upstream:
        caller = ModelCaller(
            openai_model(upstream),
            settings.models.model_copy(
                update={
                    "memory_model_structured_output": "json_schema",
                    "llm_max_retries": 1,
                }
            ),
            "summarize",
        )
        with pytest.raises(ModelCallFailed, match="summarize: the model call failed .*400.*not supported"):
            await caller.ask("TASK: summarize", "<chat>\n</chat>", schema=SummaryOutput)
    assert schemas_sent(upstream) == ["SummaryOutput", "SummaryOutput"]  # retried, with the schema


async def test_an_error_that_is_not_about_the_schema_is_not_a_fallback(settings):
    with FakeUpstream(status=500) as upstream:
        caller = ModelCaller(openai_model(upstream), settings.models, "summarize")
        with pytest.raises(ModelCallFailed):
            await caller.ask("TASK: summarize", "<chat>\n</chat>", schema=SummaryOutput)
        upstream.status = 200
        await caller.ask("TASK: summarize", "<chat>\n</chat>", schema=SummaryOutput)
    assert schemas_sent(upstream) == ["SummaryOutput", "SummaryOutput"]  # still offered


# --- ugly answers, with a schema sent: read as without one --------------------------------------

CHAT = [said("我喜欢黑咖啡，不加糖。", 1), said("最近连续两周在加班。", 2)]
FACT = '{"topic": "lifestyle", "subtopic": "diet", "content": "喜欢黑咖啡，不加糖"}'  # no confidence, no messages


async def run_summarize(caller: ModelCaller) -> Any:
    return await summarize_chat(CHAT, [], default_profile_config(), caller)


async def run_extract(caller: ModelCaller) -> Any:
    facts, _ = await extract_facts(CHAT, "用户喜欢黑咖啡。", [], default_profile_config(), caller)
    return [fact.model_dump() for fact in facts]


async def run_merge(caller: ModelCaller) -> Any:
    held = ProfileEntry(user_id="u", topic="lifestyle", subtopic="diet", content="喝茶")
    fact = ProfileFact(
        topic="lifestyle", subtopic="diet", content="喜欢黑咖啡", confidence=0.9, source_message_ids=["m1"]
    )
    profile, _ = await merge_facts([fact], [held], "u", default_profile_config(), caller)
    return [entry.content for entry in profile]


async def run_tag(caller: ModelCaller) -> Any:
    tags, _ = await tag_event("用户喜欢黑咖啡。", 3, 20, caller)
    return tags


UGLY_ANSWERS = [
    pytest.param(
        run_summarize, '```json\n{"summary": "用户喜欢黑咖啡。"}\n```', "stop", "用户喜欢黑咖啡。", id="fenced"
    ),
    pytest.param(
        run_summarize,
        'Sure! Here it is: {"summary": "用户喜欢黑咖啡。"} Hope it helps.',
        "stop",
        "用户喜欢黑咖啡。",
        id="prose-around",
    ),
    pytest.param(run_summarize, "用户喜欢黑咖啡。", "stop", "用户喜欢黑咖啡。", id="prose-only"),
    pytest.param(run_extract, '{"facts": [' + FACT + "]}", "stop", None, id="missing-fields"),
    pytest.param(run_extract, '{"facts": [' + FACT + ', {"topic": "work", "subto', "length", None, id="cut-off"),
    pytest.param(
        run_merge,
        '{"action": "update", "content": "喜欢黑咖啡，不加糖",}',
        "stop",
        ["喜欢黑咖啡，不加糖"],
        id="lowercase-trailing-comma",
    ),
    pytest.param(run_tag, '["饮食偏好", "咖啡"]', "stop", ["饮食偏好", "咖啡"], id="bare-list"),
]


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("run_step, answer, finish_reason, expected", UGLY_ANSWERS)
async def test_ugly_answers_read_as_without_a_schema(settings, run_step, answer, finish_reason, expected, streaming):
    outcomes = {}
    with FakeUpstream(reply=answer, finish_reason=finish_reason) as upstream:
        model = openai_model(upstream, streaming=streaming)
        for mode in ("off", "auto"):
            sent_before = len(upstream.requests)
            caller = ModelCaller(
                model, settings.models.model_copy(update={"memory_model_structured_output": mode}), "step"
            )
            outcomes[mode] = await run_step(caller)
            assert all(("response_format" in body) == (mode == "auto") for body in upstream.requests[sent_before:])
    assert outcomes["auto"] == outcomes["off"]
    if run_step is run_extract:
        (fact,) = outcomes["auto"]
        assert fact["content"] == "喜欢黑咖啡，不加糖" and fact["confidence"] == 0.8  # the default filled in
    else:
        assert outcomes["auto"] == expected
