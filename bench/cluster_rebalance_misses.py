"""Searches that miss a turn while the slots are rebalanced onto a new primary (issue 32): a repro.

    python bench/cluster_rebalance_misses.py --runs 6

Each run starts an embedded cluster of 3 primaries, gives 40 users 60 messages each, adds a fourth
primary and rebalances onto it while 6 writers each store a new turn and search for it at once.
A miss is a search (not flagged incomplete) whose 10 hits lack the turn just stored; for each it
prints the user's owner before and after, whether the turn's search entry exists on the owner,
the owner's index (indexing, documents), the slot, whether a search just after finds it, the
turn's BM25 rank with EXPLAINSCORE, which of its terms find it alone, the rank under other query
forms, the user's tag ids, FT.PROFILE, its rank after a forced GC, and FT.DEBUG DOCINFO.

What it found (RediSearch 2.10.5, Redis Stack 7.4): about one search in 4,000 missed, on the new
primary, for a slot it had just taken, the entry there and every term finding it alone. RedisVL's
query form, `@search_text:(a | b | ...) (@user:{...})`, scored the turn as if it held one of its
terms (2.2, where the union alone scores it 11.3, first): under the intersection the union missed
its other children for that document, and the turn fell below the 40 text candidates. A forced GC
did not change it; `(filter @search_text:a) | (filter @search_text:b) | ...` ranked it first.
memlane asks that form since (store/redis/search.py TermwiseTextQuery): 0 misses in 6 runs (26,409
searches), against 10 in 15 runs (59,486 searches) before. Writes that fail print their traceback: redis-py 8.1
follows an ASK to a primary its node map does not hold yet and fails with an AttributeError,
which the store now reports as RedisUnavailable (the save is tried again).
"""

import argparse
import asyncio
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from hash_embeddings import CharacterHashEmbeddings

from memlane.config import Settings
from memlane.store.embedded.cluster import EmbeddedCluster
from memlane.store.records import Message
from memlane.store.redis.store import open_store
from memlane.store.schema import MemoryField

USERS = [f"u{i}" for i in range(40)]


async def main(cluster, url):
    settings = Settings(redis_url=url, key_prefix="gr", data_dir=Path(tempfile.mkdtemp()))
    store = await open_store(settings, embeddings=CharacterHashEmbeddings())
    for u in USERS:
        await store.add_messages(
            [
                Message(id=f"w{i}", user_id=u, session_id="s", role="user", content=f"filler {i} weather talk")
                for i in range(60)
            ]
        )
    port = await asyncio.to_thread(cluster.add_primary)
    primaries = [n for n in store.core.shards.cluster.get_primaries()]
    src = primaries[0].port
    reb = asyncio.get_running_loop().run_in_executor(
        None,
        lambda: cluster.cli("--cluster", "rebalance", f"127.0.0.1:{src}", "--cluster-use-empty-masters", timeout=900),
    )
    n = misses = 0

    async def worker(k):
        nonlocal n, misses
        i = 0
        while not reb.done():
            u = USERS[(k * 7 + i) % len(USERS)]
            i += 1
            text = f"unique zebra fact {k}-{i} of {u}"
            try:
                await store.add_messages(
                    [Message(id=f"t{k}-{i}", user_id=u, session_id="s", role="user", content=text)]
                )
            except Exception as error:
                print(
                    "ADD FAILED", type(error).__name__, "".join(traceback.format_exception(error))[-1500:], flush=True
                )
                continue
            before = store.core.shards.cluster.get_node_from_key(store.layout.slot_key(u)).name
            try:
                hits = await store.search_memories(u, text, limit=10)
            except Exception as error:
                print("SEARCH FAILED", type(error).__name__, flush=True)
                continue
            n += 1
            if text not in [h.memory.text for h in hits] and not hits.incomplete:
                misses += 1
                after = store.core.shards.cluster.get_node_from_key(store.layout.slot_key(u)).name
                node = store.core.shards.cluster.get_node_from_key(store.layout.slot_key(u))
                index = await store.core.shards.index_of(node)
                client = index.client
                key = store.layout.memory(u, f"message:t{k}-{i}")
                exists = await client.exists(key)
                info = await client.execute_command("FT.INFO", index.name)
                info = {
                    (a.decode() if isinstance(a, bytes) else a): b
                    for a, b in (info.items() if isinstance(info, dict) else zip(info[::2], info[1::2]))
                }
                slot = store.client.keyslot(key)
                same = await store.search_memories(u, text, limit=10)  # the same search again, at once
                from memlane.store.text.terms import query_terms

                search_text = await client.hget(key, MemoryField.SEARCH_TEXT)
                digest = store.layout.user_tag(u).replace(".", "\\.")
                ranked = await client.execute_command(
                    "FT.SEARCH",
                    index.name,
                    f"@{MemoryField.USER}:{{{digest}}} @{MemoryField.SEARCH_TEXT}:({'|'.join(query_terms(text))})",
                    "NOCONTENT",
                    "WITHSCORES",
                    "SCORER",
                    "BM25STD",
                    "EXPLAINSCORE",
                    "LIMIT",
                    0,
                    200,
                    "DIALECT",
                    2,
                )
                results = ranked.get(b"results", ranked.get("results", [])) if isinstance(ranked, dict) else []
                ids = [(r.get(b"id", r.get("id")), r.get(b"score", r.get("score"))) for r in results]
                ids = [(i.decode() if isinstance(i, bytes) else i, score) for i, score in ids]
                mine = [n for n, (i, _) in enumerate(ids) if i == key]

                def explained(r):
                    return r.get(b"score", r.get("score"))

                if mine:
                    print("   top explained", results[0], flush=True)
                    print("   mine explained", results[mine[0]], flush=True)
                print(
                    "   search_text",
                    search_text,
                    "text rank (BM25STD, memlane's scorer)",
                    (mine[0] + 1) if mine else None,
                    "of",
                    len(ids),
                    "scores top",
                    [round(float(sc[0] if isinstance(sc, list) else sc), 3) for _, sc in ids[:3]],
                    flush=True,
                )
                for term in query_terms(text):  # which of its terms the owner's index finds the turn under
                    alone = await client.execute_command(
                        "FT.SEARCH",
                        index.name,
                        f"@user:{{{digest}}} @search_text:({term})",
                        "NOCONTENT",
                        "LIMIT",
                        0,
                        1000,
                        "DIALECT",
                        2,
                    )
                    found = [r.get(b"id", r.get("id")) for r in alone.get(b"results", alone.get("results", []))]
                    print(
                        "   term", term, "finds it", key.encode() in found or key in found, "of", len(found), flush=True
                    )
                terms = "|".join(query_terms(text))
                for name, variant in [
                    ("union alone", f"@search_text:({terms})"),
                    ("user first", f"@user:{{{digest}}} @search_text:({terms})"),
                    (
                        "union of intersections",
                        "|".join(f"(@user:{{{digest}}} @search_text:{t})" for t in query_terms(text)),
                    ),
                    ("union reversed", f"@user:{{{digest}}} @search_text:({'|'.join(reversed(query_terms(text)))})"),
                ]:
                    ranked = await client.execute_command(
                        "FT.SEARCH",
                        index.name,
                        variant,
                        "NOCONTENT",
                        "WITHSCORES",
                        "SCORER",
                        "BM25STD",
                        "LIMIT",
                        0,
                        2000,
                        "DIALECT",
                        2,
                    )
                    rows = ranked.get(b"results", ranked.get("results", []))
                    order = [r.get(b"id", r.get("id")) for r in rows]
                    at = [n for n, i in enumerate(order) if i in (key, key.encode())]
                    print(
                        "   variant",
                        name,
                        "rank",
                        at[0] + 1 if at else None,
                        "of",
                        len(order),
                        "score",
                        rows[at[0]].get(b"score") if at else None,
                        "top",
                        rows[0].get(b"score") if rows else None,
                        flush=True,
                    )
                try:
                    dump = await client.execute_command("FT.DEBUG", "DUMP_TAGIDX", index.name, "user")
                    for value, ids in (
                        zip(dump[::2], dump[1::2])
                        if dump and not isinstance(dump[0], list)
                        else [(d[0], d[1]) for d in dump]
                    ):
                        if value in (digest.replace("\\", "").encode(), digest.replace("\\", "")):
                            print("   tag ids", ids, "sorted", list(ids) == sorted(ids), flush=True)
                except Exception as error:
                    print("   tag dump", error, flush=True)
                try:
                    print(
                        "   profile",
                        await client.execute_command(
                            "FT.PROFILE",
                            index.name,
                            "SEARCH",
                            "LIMITED",
                            "QUERY",
                            f"@user:{{{digest}}} @search_text:({terms})",
                            "NOCONTENT",
                            "SCORER",
                            "BM25STD",
                            "LIMIT",
                            0,
                            3,
                            "DIALECT",
                            2,
                        ),
                        flush=True,
                    )
                except Exception as error:
                    print("   profile", error, flush=True)
                try:
                    await client.execute_command("FT.DEBUG", "GC_FORCEINVOKE", index.name)
                    ranked = await client.execute_command(
                        "FT.SEARCH",
                        index.name,
                        f"@user:{{{digest}}} @search_text:({terms})",
                        "NOCONTENT",
                        "WITHSCORES",
                        "SCORER",
                        "BM25STD",
                        "LIMIT",
                        0,
                        2000,
                        "DIALECT",
                        2,
                    )
                    rows = ranked.get(b"results", ranked.get("results", []))
                    order = [r.get(b"id", r.get("id")) for r in rows]
                    at = [n for n, i in enumerate(order) if i in (key, key.encode())]
                    print("   after GC rank", at[0] + 1 if at else None, "of", len(order), flush=True)
                except Exception as error:
                    print("   gc", error, flush=True)
                try:
                    print(
                        "   docinfo", await client.execute_command("FT.DEBUG", "DOCINFO", index.name, key), flush=True
                    )
                except Exception as error:
                    print("   docinfo", error, flush=True)
                again = await store.search_memories(u, text, limit=100)
                print(
                    "MISS",
                    u,
                    "owner",
                    before,
                    "->",
                    after,
                    "hits",
                    len(hits),
                    "same search again",
                    text in [h.memory.text for h in same],
                    "100 deep",
                    text in [h.memory.text for h in again],
                    "exists on owner",
                    exists,
                    "index",
                    index.name,
                    "indexing",
                    info.get("indexing"),
                    "docs",
                    info.get("num_docs"),
                    "slot",
                    slot,
                    "ready",
                    node.name in store.core.shards._ready,
                    flush=True,
                )

    await asyncio.gather(*(worker(k) for k in range(6)))
    await reb
    print("new primary", port, "searches", n, "misses", misses)
    await store.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    for _ in range(parser.parse_args().runs):
        cluster = EmbeddedCluster(Settings(data_dir=Path(tempfile.mkdtemp()), redis_url=None).store, primaries=3)
        url = cluster.start()
        try:
            asyncio.run(main(cluster, url))
        finally:
            cluster.stop()
