"""mem0's documented calls, as its docs write them (the open-source quickstart and the "memory
operations" pages: add, search, update, delete, plus get, get_all, history, reset and
`Memory.from_config`), each script a function of the `Memory` it runs on: mem0's own, memlane's
facade, or memlane's client (tests/test_mem0_differential.py passes each in turn). Only the import
line of the docs is left out; where a script differs from the page, the comment says why.

A script's `workdir` is a folder of its own (mem0 keeps its vector store there when configured).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def quickstart(Memory: Any, workdir: Path) -> None:  # noqa: N803 (mem0's class, passed in)
    # docs.mem0.ai/open-source/python-quickstart
    m = Memory()
    messages = [
        {"role": "user", "content": "Hi, I'm Alex. I love basketball and gaming."},
        {"role": "assistant", "content": "Hey Alex! I'll remember your interests."},
    ]
    m.add(messages, user_id="alex")
    results = m.search("What do you know about me?", filters={"user_id": "alex"})
    print(results)


def add_memory(Memory: Any, workdir: Path) -> None:  # noqa: N803
    # core-concepts/memory-operations/add, "Add with Mem0 Open Source"
    m = Memory()
    messages = [
        {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
        {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
        {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
        {
            "role": "assistant",
            "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future.",
        },
    ]
    # Store inferred memories (default behavior)
    result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"})
    # Optionally store raw messages without inference
    result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"}, infer=False)
    print(result)
    # not on the page: what the user now has
    print(m.get_all(filters={"user_id": "alice"}))


def search_memory(Memory: Any, workdir: Path) -> None:  # noqa: N803
    # core-concepts/memory-operations/search, "Search with Mem0 Open Source"; the memory searched is
    # the add page's JavaScript example, in Python
    m = Memory()
    m.add(
        "I like to drink coffee in the morning and go for a walk", user_id="alice", metadata={"category": "preferences"}
    )
    # Simple search: entity IDs go in `filters`
    related_memories = m.search("Should I drink coffee or tea?", filters={"user_id": "alice"})
    # Search with additional metadata filters (combine entity + metadata in the same dict); the page's
    # `{"categories": {"contains": "diet"}}` is a platform operator memlane does not have: equality here
    memories = m.search("coffee in the morning", filters={"user_id": "alice", "category": "preferences"})
    print(related_memories, memories)
    # "Tune parameters: adjust top_k for result count, threshold for relevance cutoff"
    print(m.search("coffee", filters={"user_id": "alice"}, top_k=1, threshold=0.1))


def update_and_delete(Memory: Any, workdir: Path) -> None:  # noqa: N803
    # core-concepts/memory-operations/update and delete, "with Mem0 OSS"; the memory id is the one
    # `add` answered (the pages write "mem_123")
    memory = Memory()
    added = memory.add("I'm vegetarian and allergic to nuts.", user_id="alex")
    memory_id = added["results"][0]["id"]
    print(memory.get(memory_id))
    memory.update(
        memory_id=memory_id,
        data="Alex now prefers decaf coffee",
    )
    print(memory.get(memory_id))
    print(memory.history(memory_id))
    memory.delete(memory_id=memory_id)
    print(memory.get(memory_id))
    print(memory.history(memory_id))
    memory.add("I live in Lyon.", user_id="alice")
    memory.delete_all(user_id="alice")
    print(memory.get_all(filters={"user_id": "alice"}))


def raw_messages(Memory: Any, workdir: Path) -> None:  # noqa: N803
    # the add page's `infer=False`, alone: raw messages kept as they are
    m = Memory()
    messages = [
        {"role": "user", "content": "Remember that my locker code is 4411."},
        {"role": "assistant", "content": "Saved."},
    ]
    print(m.add(messages, user_id="carol", infer=False))
    print(m.get_all(filters={"user_id": "carol"}))
    print(m.search("locker code", filters={"user_id": "carol"}))


def scoped(Memory: Any, workdir: Path) -> None:  # noqa: N803
    # "User / Session identifiers": an agent's and a run's memory of a user
    m = Memory()
    m.add("I love basketball, I play every Sunday.", user_id="dave", agent_id="coach", run_id="week-1")
    print(m.search("basketball", filters={"user_id": "dave", "agent_id": "coach"}))
    print(m.get_all(filters={"user_id": "dave", "agent_id": "coach"}))


def from_config(Memory: Any, workdir: Path) -> None:  # noqa: N803
    # open-source configuration: Memory.from_config with mem0's dict (the vector store in the
    # script's folder); then reset
    config = {
        "llm": {"provider": "openai", "config": {"model": "gpt-4.1-nano-2025-04-14", "temperature": 0.1}},
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": "from_config", "path": str(workdir / "qdrant")},
        },
        "history_db_path": str(workdir / "history.db"),
    }
    m = Memory.from_config(config)
    m.add("I'm planning a trip to Tokyo next month.", user_id="bob")
    print(m.search("trip to Tokyo", filters={"user_id": "bob"}, top_k=5))
    m.reset()
    print(m.get_all(filters={"user_id": "bob"}))


SCRIPTS = [quickstart, add_memory, search_memory, update_and_delete, raw_messages, scoped, from_config]
