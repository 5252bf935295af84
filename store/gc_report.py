"""What a retention sweep (`memlane gc`, the worker's scheduled sweep) removed: a record of its
own, so the protocols can name it without loading Redis."""

from __future__ import annotations

from pydantic import BaseModel


class GcReport(BaseModel):
    """Counts of what one sweep removed or fixed, by what it was."""

    users: int = 0  # users swept
    history_entries: int = 0  # timeline and session listings of expired messages
    sessions: int = 0  # sessions with no message left: their listing, rolling summary and title
    event_entries: int = 0  # event times of expired cards and notes
    search_entries: int = 0  # search entries whose record is gone
    search_entries_retimed: int = (
        0  # search entries given their record's expiry (a past value after its entry was read)
    )
    dedupe_entries: int = 0  # notes of a stored text whose memory is gone
    item_entries: int = 0  # LangGraph item listings of expired items
    quota_entries: int = 0  # records deleted or expired, out of the users' quota usage

    def add(self, other: GcReport) -> None:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def lines(self) -> list[str]:
        """One line per kind of thing removed (none: one line saying so)."""
        said = [
            (self.history_entries, "history entries of expired messages removed"),
            (self.sessions, "sessions with no message left removed (listing, summary, title)"),
            (self.event_entries, "event times of expired cards and notes removed"),
            (self.search_entries, "search entries whose record is gone removed"),
            (self.search_entries_retimed, "search entries given their record's expiry"),
            (self.dedupe_entries, "stored-text notes of memories that are gone removed"),
            (self.item_entries, "item listings of expired items removed"),
            (self.quota_entries, "quota entries of deleted or expired records removed"),
        ]
        lines = [f"{what}: {count}" for count, what in said if count]
        users = f"{self.users} user{'s' if self.users != 1 else ''} swept"
        return [users + (", nothing to remove" if not lines else ""), *lines]
