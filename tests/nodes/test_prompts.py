"""Every prompt of every node carries the rule that chat text is data, not instructions."""

from __future__ import annotations

import importlib
import pkgutil

import memlane.nodes
from memlane.nodes.llm import DATA_RULE, LANGUAGE_RULE

# answers that hold no text written for the user need no language rule
NO_TEXT_ANSWER = {"memlane.nodes.topic_shift.TOPIC_SHIFT_PROMPT", "memlane.nodes.confirm_forget.CONFIRM_FORGET_PROMPT"}


def node_prompts() -> dict[str, str]:
    """Every module-level `*_PROMPT` string of `memlane.nodes`, by its dotted name."""
    prompts: dict[str, str] = {}
    for module_info in pkgutil.iter_modules(memlane.nodes.__path__, "memlane.nodes."):
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if name.endswith("_PROMPT") and isinstance(value, str):
                prompts[f"{module_info.name}.{name}"] = value
    return prompts


def test_every_node_prompt_carries_the_data_rule():
    prompts = node_prompts()
    assert {
        "memlane.nodes.merge.MERGE_PROMPT",
        "memlane.nodes.merge.MERGE_BATCH_PROMPT",
        "memlane.nodes.organize.ORGANIZE_PROMPT",
        "memlane.nodes.resummarize.RESUMMARIZE_PROMPT",
        "memlane.nodes.session_title.TITLE_PROMPT",
        "memlane.nodes.topic_shift.TOPIC_SHIFT_PROMPT",
    } <= set(prompts)
    assert [name for name, prompt in prompts.items() if DATA_RULE not in prompt] == []


def test_every_node_prompt_that_writes_text_carries_the_language_rule():
    prompts = node_prompts()
    missing = [name for name, prompt in prompts.items() if LANGUAGE_RULE not in prompt]
    assert sorted(missing) == sorted(NO_TEXT_ANSWER)


def test_prompts_with_placeholders_still_format():
    formatted = {
        name: prompt.format(max_tokens=50, max_subtopics=4, max_tags=3)
        for name, prompt in node_prompts().items()
        if "{max_" in prompt
    }
    assert formatted and all(DATA_RULE in prompt and "{max_" not in prompt for prompt in formatted.values())
