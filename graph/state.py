"""The memory graph's typed state: the keys several steps share.

A step that writes a key no other step reads yet declares it in its own module, in the TypedDict
its graph function takes as `state` (with the keys it reads): LangGraph adds the channels of each
node's input schema to the graph, so such a key needs no line here. A key another step reads
goes here, where that step's `MemoryState` shows it.
"""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from memlane.nodes.extract import ProfileFact
from memlane.nodes.persist import MemoryRunResult
from memlane.store.records import Message, ProfileEntry


class MemoryInput(TypedDict):
    """What a run is given: the user and their unprocessed messages (with seq)."""

    user_id: str
    messages: list[Message]


class MemoryState(MemoryInput, total=False):
    """Everything the steps pass along; counters add up across parallel branches."""

    chat: list[Message]  # the messages the model reads, after truncation
    profile: list[ProfileEntry]  # the profile before this run
    summary: str
    facts: list[ProfileFact]
    held_facts: list[ProfileFact]  # under memory_min_confidence: held for review, not merged
    working_profile: list[ProfileEntry]  # the profile as merge / organize / re-summarize leave it
    tags: list[str]
    notes: Annotated[list[str], operator.add]
    model_calls: Annotated[int, operator.add]
    prompt_tokens: Annotated[int, operator.add]
    result: MemoryRunResult


class MemoryOutput(TypedDict, total=False):
    result: MemoryRunResult
