"""Profile configurations per tenant and per agent (nodes/profile_configs.py): which slots and
prompt rules a memory run uses for its store user, read from MEMLANE_PROFILE_CONFIG's file and
from `memlane serve`'s `[profile]` sections alike, a bad key named."""

from __future__ import annotations

import pytest
from memory_graph_helpers import CHINESE_CHAT, add_chat, scripted

from memlane import SHARED_USER_ID, scoped_user_id
from memlane.config import Settings
from memlane.graph import (
    CONTEXT_PARTS,
    MemoryContext,
    ProfileConfigs,
    load_profile_configs,
    run_memory_graph,
    with_serve_sections,
)
from memlane.nodes.profile_config import (
    ProfileConfig,
    StepPrompts,
    TopicConfig,
    default_profile_config,
)
from memlane.nodes.profile_configs import configured_profile_configs

FILE = """
strict = false
[prompts]
extract = "Never keep salaries."

[tenants.acme]
strict = true
topics = [{name = "work", subtopics = [{name = "occupation"}]}]

[agents.coach]
prompts = {extract = "Only training habits matter.", summarize = "Write about training only."}
"""


def test_an_agents_section_wins_over_its_tenants_which_wins_over_the_default(tmp_path):
    path = tmp_path / "profile.toml"
    path.write_text(FILE)
    configs = load_profile_configs(path)
    assert configs.of("bob").prompts.extract == "Never keep salaries." and not configs.of("bob").strict
    assert configs.of("bob").topics == default_profile_config().topics  # a file without topics keeps the built-in ones
    acme = configs.of("acme/bob")
    assert acme.strict and [t.name for t in acme.topics] == ["work"] and acme.prompts.extract == "Never keep salaries."
    coach = configs.of(scoped_user_id("acme/bob", "coach"))
    assert (
        coach.prompts.extract == "Only training habits matter." and not coach.strict
    )  # the agent's keys over the default's
    assert configs.of(scoped_user_id("acme/bob", "tutor")).strict  # another agent: its tenant's
    assert configs.of("globex/bob") == configs.default and configs.of(SHARED_USER_ID) == configs.default


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[tenants.acme]\nstrictt = true\n", "tenants.acme.strictt"),
        ("[agents.coach.prompts]\nextrakt = 'x'\n", "agents.coach.prompts.extrakt"),
        ("topics = [{nme = 'work'}]\n", "topics.0.nme"),
        ("[prompts]\nextract = '" + "x" * 4001 + "'\n", "prompts.extract"),
    ],
)
def test_a_bad_key_is_named_with_the_file(tmp_path, text, named):
    path = tmp_path / "profile.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"{path}.*{named}"):
        load_profile_configs(path)


def test_the_serve_files_sections_over_the_settings_file(tmp_path):
    base = ProfileConfigs(
        default=ProfileConfig(topics=[TopicConfig(name="work")], prompts=StepPrompts(extract="base rule"))
    )
    serve = {
        "keys": [],
        "profile": {"strict": True},
        "tenants": {"acme": {"profile": {"prompts": {"summarize": "acme rule"}}}, "globex": {}},
        "personas": {
            "coach": {"model": "m", "profile": {"topics": [{"name": "training"}]}},
            "assistant": {"model": "m"},
        },
    }
    configs = with_serve_sections(base, serve)
    assert configs.default.strict and configs.default.prompts.extract == "base rule"
    assert configs.of("acme/ann").prompts.summarize == "acme rule" and configs.of("acme/ann").strict
    assert [t.name for t in configs.of(scoped_user_id("acme/ann", "coach")).topics] == ["training"]
    assert configs.of(scoped_user_id("acme/ann", "assistant")) == configs.of("acme/ann")
    with pytest.raises(ValueError, match=r"personas\.coach\.profile\.topics\.0\.name"):
        with_serve_sections(base, {"personas": {"coach": {"profile": {"topics": [{"name": ""}]}}}})

    # memlane worker reads the same sections through MEMLANE_SERVE_CONFIG
    path = tmp_path / "serve.toml"
    path.write_text('[personas.coach]\nmodel = "m"\n[personas.coach.profile.prompts]\nextract = "coach rule"\n')
    from_settings = configured_profile_configs(None, Settings(serve_config=path).serve.config_file)
    assert from_settings.of(scoped_user_id("acme/ann", "coach")).prompts.extract == "coach rule"
    with pytest.raises(ValueError, match="MEMLANE_SERVE_CONFIG"):
        configured_profile_configs(None, tmp_path / "missing.toml")


async def test_a_run_uses_the_slots_and_rules_of_its_store_user(store, settings):
    configs = ProfileConfigs(
        default=default_profile_config(),
        agents={
            "coach": default_profile_config().model_copy(
                update={
                    "strict": True,
                    "topics": [t for t in default_profile_config().topics if t.name == "lifestyle"],
                    "prompts": StepPrompts(extract="Keep only sleep and diet.", summarize="Focus on daily habits."),
                }
            )
        },
    )
    coach = scoped_user_id("ana", "coach")
    for owner in ("ana", coach):
        await add_chat(store, owner, CHINESE_CHAT)
    for owner in ("ana", coach):
        model = scripted()
        await run_memory_graph(
            owner, MemoryContext(store=store, llm=model, **settings.parts(*CONTEXT_PARTS), profile_configs=configs)
        )
        rules_seen = "Keep only sleep and diet." in "\n".join(model.prompts)
        assert rules_seen == (owner == coach)
        assert ("Focus on daily habits." in "\n".join(model.prompts)) == (owner == coach)
    assert {e.topic for e in await store.get_profile(coach)} == {"lifestyle"}  # strict: work/workload dropped
    assert {e.topic for e in await store.get_profile("ana")} == {"lifestyle", "work"}


async def test_a_tenant_turns_validation_on_for_its_runs_alone(store, settings):
    """issue 54: `[tenants.<id>.profile] validate_all = true` in memlane serve's file: the tenant's runs ask
    the model before adding to an empty slot, another tenant's do not."""
    base = ProfileConfigs(default=ProfileConfig(topics=[TopicConfig(name="work", validate_merge=False)]))
    configs = with_serve_sections(base, {"tenants": {"acme": {"profile": {"validate_all": True}}}})
    assert configs.of("acme/ann").validate_all and not configs.of("globex/ann").validate_all
    fact = {"topic": "work", "subtopic": "occupation", "content": "nurse", "confidence": 0.9, "messages": [1]}
    for owner in ("acme/ann", "globex/ann"):
        await add_chat(store, owner, [("user", None, "I'm a nurse in Lyon.")])
        model = scripted(facts=[fact], merge='{"action": "ABORT", "content": ""}')
        await run_memory_graph(
            owner, MemoryContext(store=store, llm=model, **settings.parts(*CONTEXT_PARTS), profile_configs=configs)
        )
        asked = any("TASK: merge" in prompt for prompt in model.prompts)
        assert asked == (owner == "acme/ann")
        assert [e.content for e in await store.get_profile(owner)] == ([] if asked else ["nurse"])
