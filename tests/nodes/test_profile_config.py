"""Profile slots, strict mode and validation flags."""

from __future__ import annotations

import pytest

from memlane.nodes.llm import has_cjk
from memlane.nodes.profile_config import ProfileConfig, SubtopicConfig, TopicConfig, default_profile_config


def test_default_config_covers_what_people_tell_assistants_in_both_languages():
    config = default_profile_config()
    names = {topic.name for topic in config.topics}
    assert {
        "basic_info",
        "work",
        "interests",
        "lifestyle",
        "health",
        "relationships",
        "goals",
        "assistant_preferences",
        "people",
    } <= names
    for topic in config.topics:
        assert has_cjk(topic.description) and any(char.isascii() and char.isalpha() for char in topic.description)
        assert topic.subtopics or topic.open_subtopics  # people: one subtopic per person
    assert config.find_subtopic("Lifestyle", " Sleep_Schedule ") is not None


def test_strict_mode_allows_only_configured_slots():
    config = ProfileConfig(topics=[TopicConfig(name="work", subtopics=[SubtopicConfig(name="job")])], strict=True)
    assert config.allows("work", "job") and config.allows("WORK", "Job")
    assert not config.allows("work", "salary") and not config.allows("pets", "dog")
    assert ProfileConfig(topics=config.topics, strict=False).allows("pets", "dog")


def test_people_takes_any_persons_name_even_in_strict_mode():
    config = default_profile_config().model_copy(update={"strict": True})
    assert config.allows("people", "朋友A") and config.allows("People", "Caroline")
    assert not config.allows("interests", "朋友A")
    assert not config.needs_validation("people", "Caroline")  # a new person is added without asking
    assert "any subtopic of people" in config.describe()


def test_validation_flag_per_slot_overrides_the_topic():
    config = ProfileConfig(
        topics=[
            TopicConfig(
                name="work",
                validate_merge=False,
                subtopics=[SubtopicConfig(name="job"), SubtopicConfig(name="salary", validate_merge=True)],
            )
        ]
    )
    assert not config.needs_validation("work", "job")
    assert config.needs_validation("work", "salary")
    assert config.needs_validation("unknown", "slot")


def test_duplicate_topics_are_rejected():
    with pytest.raises(ValueError, match="configured twice"):
        ProfileConfig(topics=[TopicConfig(name="Work"), TopicConfig(name="work ")])


def test_the_slots_come_from_the_file_the_settings_name_and_a_bad_key_is_named(tmp_path, monkeypatch):
    """Issue 31, item 8 (in Settings): MEMLANE_PROFILE_CONFIG names a TOML (or JSON) file of slots,
    read into the settings' graph part, which the memory graph's context reads when it is made (a scheduler, worker or app starting); a misspelt
    key stops it there, naming the file and the key."""
    from memlane.config import Settings
    from memlane.nodes.context import MemoryContext

    slots = tmp_path / "profile.toml"
    slots.write_text(
        'strict = true\nmax_subtopics_per_topic = 4\n\n[[topics]]\nname = "diet"\ndescription = "what they eat and drink"\n'
        '[[topics.subtopics]]\nname = "coffee"\ndescription = "how they take it"\n'
    )
    monkeypatch.setenv("MEMLANE_PROFILE_CONFIG", str(slots))
    context = MemoryContext(store=None, llm=None, graph=Settings().graph)  # type: ignore[arg-type]
    assert context.profile_config.strict and context.profile_config.find_subtopic("Diet", "coffee") is not None
    assert not context.profile_config.allows("work", "role")

    slots.write_text('[[topics]]\nname = "diet"\ndescripton = "misspelt"\n')
    with pytest.raises(ValueError, match=r"profile\.toml: topics\.0\.descripton: Extra inputs are not permitted"):
        MemoryContext(store=None, llm=None, graph=Settings().graph)  # type: ignore[arg-type]
    (tmp_path / "profile.json").write_text('{"strict": "sometimes"}')
    with pytest.raises(ValueError, match=r"profile\.json: strict"):
        MemoryContext(store=None, llm=None, graph=Settings(profile_config=tmp_path / "profile.json").graph)  # type: ignore[arg-type]
    assert (
        MemoryContext(store=None, llm=None, graph=Settings(profile_config=None).graph).profile_config
        == default_profile_config()
    )  # type: ignore[arg-type]
