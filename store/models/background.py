"""Work nobody waits on: what runs inside `in_background()` (indexing a saved turn, a memory-graph
run's writes) tells the embedder so, and its texts queue behind the searches and writes that a
caller waits on (store/models/embeddings.py). A context variable, so it follows the work through the
store's calls and the tasks they start, without an argument on every one of them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_background: ContextVar[bool] = ContextVar("memlane_background", default=False)


@contextmanager
def in_background() -> Iterator[None]:
    """Within this block, embedding is work nobody waits on."""
    token = _background.set(True)
    try:
        yield
    finally:
        _background.reset(token)


def working_in_background() -> bool:
    """Whether the caller is inside `in_background()`."""
    return _background.get()
