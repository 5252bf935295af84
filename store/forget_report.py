"""What a `forget` answers: each record it changed, with the clauses that went (or, in a dry
run, would go), and the sentence the doors show."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field


class ForgottenRecord(BaseModel):
    """One record `forget` changed."""

    kind: Literal["profile", "event", "message", "summary", "item"]
    id: str = Field(description="profile entry, event, message or item memory id; the session id of a summary")
    action: Literal["deleted", "rewritten"] = Field(
        description="deleted: the whole record went; rewritten: the sentences stating the fact went"
    )
    removed: list[str] = Field(
        default_factory=list, description="what went: the clauses cut from it, or its whole text when it was deleted"
    )


class ForgetReport(BaseModel):
    """What `forget` (or deleting a profile entry, event or message) removed, and where."""

    user_id: str
    query: str
    subject: str = Field(default="", description='what was matched: the query without "forget what I said about"')
    records: list[ForgottenRecord] = Field(default_factory=list)
    dry_run: bool = Field(
        default=False, description="a preview: the records say what forget would change, nothing was changed"
    )

    def add(self, kind: str, record_id: str, action: str, removed: Sequence[str] = ()) -> None:
        if not any(r.kind == kind and r.id == record_id for r in self.records):
            self.records.append(ForgottenRecord(kind=kind, id=record_id, action=action, removed=list(removed)))

    def has(self, kind: str, record_id: str) -> bool:
        return any(r.kind == kind and r.id == record_id for r in self.records)

    @property
    def forgot_anything(self) -> bool:
        return bool(self.records)

    def describe(self) -> str:
        """One line: "forgot 1 profile entry, 2 messages (1 rewritten), 1 session summary"."""
        if not self.records:
            return f"nothing stored matched {self.subject or self.query!r}"
        verb = "would forget " if self.dry_run else "forgot "
        nouns = {
            "profile": ("profile entry", "profile entries"),
            "event": ("event", "events"),
            "message": ("message", "messages"),
            "summary": ("session summary", "session summaries"),
            "item": ("item", "items"),
        }
        parts = []
        for kind, (singular, plural) in nouns.items():
            records = [r for r in self.records if r.kind == kind]
            if records:
                rewritten = sum(1 for r in records if r.action == "rewritten")
                parts.append(
                    f"{len(records)} {singular if len(records) == 1 else plural}"
                    + (f" ({rewritten} rewritten)" if rewritten else "")
                )
        return verb + ", ".join(parts)

    def details(self) -> str:
        """`describe`, then one line a record with what goes from it: what a dry run shows
        ("- message m0, rewritten: 我住在成都，")."""
        lines = [self.describe()]
        for record in self.records:
            removed = " | ".join(" ".join(text.split()) for text in record.removed)
            lines.append(f"- {record.kind} {record.id}, {record.action}" + (f": {removed}" if removed else ""))
        return "\n".join(lines)
