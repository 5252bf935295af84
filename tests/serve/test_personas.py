"""Persona recall overrides (serve/config.py `PERSONA_RECALL_SETTINGS`): declared, and each one
changes what recall hands the model for a turn under that persona (issue 33, item 1: a persona
setting that was accepted and changed nothing is what this guards against)."""

from __future__ import annotations

import pytest
from test_recall import PROFILE, add_profile

from memlane.recall import Recall, RecallParts, recall
from memlane.serve.config import PERSONA_RECALL_SETTINGS, Persona
from memlane.store.records import Event, MemoryUpdate, Message


async def remembered(store) -> None:
    await add_profile(store, "u", PROFILE + [("family", "sister", "sister Alice lives in Osaka", 0.9)])
    await store.add_messages(
        [
            Message(
                id="m1",
                user_id="u",
                session_id="old",
                role="user",
                content="My sister Alice lives in Osaka and loves ramen.",
                created_at=1000,
            ),
            Message(
                id="m2",
                user_id="u",
                session_id="old",
                role="assistant",
                content="Osaka has great ramen shops!",
                created_at=1001,
            ),
            Message(id="m3", user_id="u", session_id="s", role="user", content="I want to book flights next week."),
            Message(
                id="m4", user_id="u", session_id="s", role="assistant", content="Sure, which city do you fly from?"
            ),
        ]
    )
    event = Event(
        id="e1", user_id="u", summary="Talked about visiting Alice in Osaka in spring.", source_message_ids=["m1"]
    )
    await store.apply_update(MemoryUpdate(user_id="u", event=event, memories=[event.as_memory()]))


async def recalled(store, settings, question: str, **overrides) -> Recall:
    """What recall hands the model for `question` in a turn of a persona with these recall overrides."""
    persona = Persona.model_validate({"model": "m", "recall": overrides})
    return await recall(store, "u", "s", question, parts=RecallParts.of(persona.settings(settings)))


def layers(result: Recall) -> list[str]:
    return [item.layer for item in result.memories]


# each declared override: two values, and how the first's recall differs from the second's
EFFECTS = {
    "enabled": ((False, True), "Where does Alice live?", lambda low, high: not low.text and high.memories),
    "max_tokens": ((80, 1200), "Where does Alice live?", lambda low, high: low.tokens <= 80 < high.tokens),
    "max_memories": ((1, 10), "Where does Alice live?", lambda low, high: len(low.memories) == 1 < len(high.memories)),
    "recent_messages": ((0, 4), "Where does Alice live?", lambda low, high: not low.recent and high.recent),
    "min_relevance": ((0.99, 0.02), "tell me about ramen", lambda low, high: len(low.memories) < len(high.memories)),
    "neighbour_messages": (
        (0, 1),
        "Where does Alice live?",
        lambda low, high: (
            ["m1"] in [item.source_message_ids for item in low.memories]
            and ["m1", "m2"] in [item.source_message_ids for item in high.memories]
        ),
    ),
    "weight_event": (
        (0.0, 10.0),
        "Where does Alice live?",
        lambda low, high: layers(low)[0] == "message" and layers(high)[0] == "event",
    ),
    "weight_message": (
        (0.0, 10.0),
        "Where does Alice live?",
        lambda low, high: layers(low)[0] == "event" and layers(high)[0] == "message",
    ),
}


def test_every_persona_setting_is_declared_and_shown_to_work():
    assert set(EFFECTS) == set(PERSONA_RECALL_SETTINGS)


@pytest.mark.parametrize("name", sorted(EFFECTS))
async def test_a_persona_setting_changes_what_recall_hands_the_model(store, settings, name):
    await remembered(store)
    (low_value, high_value), question, differs = EFFECTS[name]
    low = await recalled(store, settings, question, **{name: low_value})
    high = await recalled(store, settings, question, **{name: high_value})
    assert differs(low, high), (name, low.text, high.text)


def test_a_setting_a_persona_cannot_change_is_refused_by_name():
    from pydantic import ValidationError

    for name in ("similarity_floor", "echo_weight", "timeout_seconds", "weight_profile"):
        with pytest.raises(ValidationError, match=name):
            Persona.model_validate({"model": "m", "recall": {name: 0.5}})


def test_a_personas_and_a_tenants_profile_configuration_reach_their_runs_and_a_bad_key_stops_the_start(
    settings, tmp_path
):
    from memlane import scoped_user_id
    from memlane.serve.config import ServeConfig, ServeConfigError
    from memlane.serve.service import ServeService
    from memlane.testing import ScriptedChatModel

    personas = {
        "coach": {"model": "m", "profile": {"strict": True, "prompts": {"extract": "Training only."}}},
        "desk": {"model": "m", "memory_scope": "user"},
    }
    config = ServeConfig.model_validate(
        {
            "personas": personas,
            "profile": {"prompts": {"summarize": "Be brief."}},
            "tenants": {"acme": {"profile": {"max_subtopics_per_topic": 3}}},
        }
    )
    configs = ServeService(config, settings, memory_model=ScriptedChatModel(rules=[])).profile_configs
    coach = configs.of(scoped_user_id("acme/ann", "coach"))
    assert coach.strict and coach.prompts.extract == "Training only." and coach.prompts.summarize == "Be brief."
    assert configs.of("acme/ann").max_subtopics_per_topic == 3 and not configs.of("acme/ann").strict
    assert (
        configs.of("globex/ann").prompts.summarize == "Be brief."
        and configs.of("globex/ann").max_subtopics_per_topic == 8
    )

    with pytest.raises(Exception, match=r"personas\.coach\.profile\.topics\.0\.nme"):
        ServeConfig.model_validate({"personas": {"coach": {"model": "m", "profile": {"topics": [{"nme": "x"}]}}}})
    with pytest.raises(Exception, match=r"tenants\.Acme"):
        ServeConfig.model_validate({"personas": personas, "tenants": {"Acme": {}}})
    with pytest.raises(Exception, match=r"tenants\.acme\.profile\.max_subtopics_per_topic"):
        ServeConfig.model_validate(
            {"personas": personas, "tenants": {"acme": {"profile": {"max_subtopics_per_topic": 0}}}}
        )
    bad_file = tmp_path / "profile.toml"
    bad_file.write_text("[agents.coach.prompts]\nextrakt = 'x'\n")
    with pytest.raises(ServeConfigError, match=r"agents\.coach\.prompts\.extrakt"):
        ServeService(
            config, settings.model_copy(update={"profile_config": bad_file}), memory_model=ScriptedChatModel(rules=[])
        )
