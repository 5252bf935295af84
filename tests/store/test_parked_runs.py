"""The dead-letter list of memory-graph runs (store/redis/parked_runs.py): park, list, drop, forget."""

from __future__ import annotations

from conftest import HOSTILE_IDS

from memlane.store.records import Message, ParkedRun


async def test_parking_the_same_run_again_adds_its_attempts_and_keeps_its_first_failure(store):
    first = await store.park_run(
        ParkedRun(id="r1", user_id="u", error="E: one", attempts=3, first_failed_at=10, last_failed_at=12)
    )
    assert first.attempts == 3
    again = await store.park_run(
        ParkedRun(id="r1", user_id="u", error="E: two", attempts=4, first_failed_at=20, last_failed_at=25)
    )
    assert (again.attempts, again.first_failed_at, again.last_failed_at, again.error) == (7, 10, 25, "E: two")
    assert await store.parked_runs("u") == [again]


async def test_parked_runs_are_listed_per_user_or_all_oldest_first_and_dropped_by_id(store):
    for index, user in enumerate(HOSTILE_IDS[:4]):
        await store.park_run(
            ParkedRun(id=f"r{index}", user_id=user, error="E", attempts=1, first_failed_at=100 - index)
        )
    assert [run.id for run in await store.parked_runs()] == ["r3", "r2", "r1", "r0"]
    assert [run.user_id for run in await store.parked_runs(HOSTILE_IDS[1])] == [HOSTILE_IDS[1]]
    assert await store.parked_runs("nobody") == []

    dropped = await store.drop_parked_run("r1")
    assert dropped is not None and dropped.user_id == HOSTILE_IDS[1]
    assert await store.drop_parked_run("r1") is None
    assert [run.id for run in await store.parked_runs()] == ["r3", "r2", "r0"]


async def test_forgetting_a_user_forgets_their_parked_runs(store):
    await store.add_messages([Message(id="m1", user_id="gone", session_id="s", role="user", content="我喜欢黑咖啡")])
    await store.park_run(ParkedRun(id="r-gone", user_id="gone", error="E: 我喜欢黑咖啡", attempts=4))
    await store.park_run(ParkedRun(id="r-kept", user_id="kept", error="E", attempts=4))
    await store.delete_user("gone")
    assert [run.id for run in await store.parked_runs()] == ["r-kept"]
    assert await store.drop_parked_run("r-gone") is None


def test_the_store_reports_its_embedders_breaker(store):
    [embedder] = store.health()
    assert embedder.name == "the embedder" and embedder.state == "closed" and embedder.describe() == ""
