"""A memory-graph run kept in the dead-letter list (store/redis/parked_runs.py holds them)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memlane.store.ids import now


class ParkedRun(BaseModel):
    """A memory-graph run that failed every retry, kept in the dead-letter list with its error.

    Its buffer is not lost: the cursor did not move, so retrying queues a run for the user.
    """

    id: str
    user_id: str
    error: str
    attempts: int = Field(ge=1, description="attempts made, over every time this run was parked")
    first_failed_at: float = Field(default_factory=now)
    last_failed_at: float = Field(default_factory=now)
