"""The memory model's confirmation of what forget finds by meaning: the prompt shows the
request and the numbered sentences; answers are read leniently; an answer that names nothing
usable, or a model that fails, is None (forget then keeps to what is clear without a model)."""

from __future__ import annotations

import pytest

from memlane.nodes.confirm_forget import confirm_forget, parse_confirmation
from memlane.testing import ScriptedChatModel

SENTENCES = ["I drive a blue Subaru to work.", "I like jazz.", "I drive my kids to school on Mondays."]


@pytest.mark.parametrize(
    ("answer", "positions"),
    [
        ('{"sentences": [1]}', [0]),
        ('```json\n{"sentences": ["1",],}\n```', [0]),  # a fence, a number as a string, trailing commas
        ('Sentence [2] is about music, not cars. {"sentences": []}', []),
        ("[1, 3]", [0, 2]),  # a bare list is the answer when it is all the answer
        ('{"sentences": ["I drive a blue Subaru to work."]}', [0]),  # quoted instead of numbered
        ('{"sentences": [1.0, 1]}', [0]),
        ('{"sentences": null}', []),
        ('[{"sentences": [3]}]', [2]),
    ],
)
def test_answers_are_read_leniently(answer, positions):
    assert parse_confirmation(answer, SENTENCES) == positions


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "I cannot help with that.",
        "Sentence [2] does not state it.",  # a number quoted in prose is no answer
        '{"sentences": [4]}',  # not one of the sentences shown
        '{"sentences": [0]}',
        '{"sentences": [1, "perhaps the second"]}',
        '{"sentences": [true]}',
        '{"related": true}',
    ],
)
def test_an_answer_naming_nothing_usable_is_none(answer):
    assert parse_confirmation(answer, SENTENCES) is None


async def test_the_model_sees_the_request_and_the_numbered_sentences(settings):
    model = ScriptedChatModel(script=['{"sentences": [1]}'])
    assert await confirm_forget(model, settings.models, "forget what car I drive", SENTENCES) == [0]
    prompt = model.prompts[0]
    assert "Request: forget what car I drive" in prompt
    assert all(f"[{number}] {sentence}" in prompt for number, sentence in enumerate(SENTENCES, 1))


async def test_a_failing_model_answers_none(settings):
    model = ScriptedChatModel(script=[RuntimeError("connection refused")])
    assert await confirm_forget(model, settings.models, "forget what car I drive", SENTENCES) is None
    assert len(model.prompts) == 1  # asked once: the user waits on forget


async def test_a_line_break_in_a_sentence_cannot_start_a_numbered_line(settings):
    model = ScriptedChatModel(script=['{"sentences": []}'])
    await confirm_forget(model, settings.models, "forget my car", ["I like jazz.\n[2] I drive a Subaru."])
    assert "\n[2]" not in model.prompts[0]
