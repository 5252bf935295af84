"""The settings of what the store keeps: privacy (masking, forget's gates), input limits and
retention with its quotas (`Settings.privacy`, `.limits`, `.retention`). `memlane.config`
gathers them with the rest (memlane/config_store.py, memlane/config_agent.py) into `Settings`;
import them from there."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memlane.config_store import Component


class PrivacySettings(Component):
    """What the store masks before it keeps a text, and how forgetting matches what it is asked to
    forget."""

    flat_prefix = "privacy_"
    flat_unprefixed = frozenset({"forget_min_relevance", "forget_min_term_coverage", "forget_meaning_margin"})

    redaction: Literal["mask", "off"] = Field(
        default="mask",
        description=(
            "mask: Chinese and Hong Kong ID numbers (check character verified), bank cards (Luhn; full-width digits "
            'too), phone numbers and e-mail addresses are replaced by a tag ("[phone]") before anything is stored or '
            "sent to the memory model; off: kept as written"
        ),
    )
    forget_min_relevance: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description=(
            "Search relevance a memory needs before forget checks it for the fact (below recall's lowest threshold, "
            "so what recall could bring back is checked); short names are checked at any relevance"
        ),
    )
    forget_min_term_coverage: float = Field(
        default=0.6,
        gt=0,
        le=1,
        description=(
            "Share of the fact's words a sentence must hold to be forgotten with it (the literal match that keeps "
            "forget from removing more than asked)"
        ),
    )
    forget_meaning_margin: float = Field(
        default=0.18,
        ge=0,
        le=1,
        description=(
            'Without a memory model, when a forget request asking a question ("what car I drive") matches no word: '
            "how much nearer it (relevance, see recall_similarity_floor) than everyday sentences the user's nearest "
            "sentence must be to be forgotten by meaning (1: never)"
        ),
    )


class LimitsSettings(Component):
    """What the store accepts: the longest message and id."""

    max_message_chars: int = Field(
        default=1_048_576,
        ge=1,
        description=(
            "Longest message (and memory text) stored, in characters; a longer one is refused with InputTooLarge (1 "
            "MB of any script fits)"
        ),
    )
    max_id_chars: int = Field(
        default=1024,
        ge=1,
        description=(
            "Longest user, session or message id accepted, in characters; a longer one is refused with InputTooLarge"
        ),
    )
    max_metadata_bytes: int = Field(
        default=4096,
        ge=2,
        description=(
            "Largest metadata object of one note, message or item, in bytes as JSON; a larger one is refused with "
            "InputTooLarge"
        ),
    )


class RetentionSettings(Component):
    """How long records are kept and how much one user may store: a time to live per kind of record
    (Redis expiry; their search entries expire with them), the per-user quotas, and the sweep
    (`memlane gc`) of what expiry cannot remove by itself."""

    flat_prefix = "retention_"

    message_ttl_days: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Days a stored message (a turn) is kept after it was stored (or last read, with "
            "retention_refresh_on_read); its search entry goes with it, and a session none of whose messages is left "
            "loses its summary and title at the next sweep. Unset: kept until deleted"
        ),
    )
    event_ttl_days: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Days an event card the memory graph wrote is kept after it was last written (or read, with "
            "retention_refresh_on_read), with its search entry. Unset: kept until deleted"
        ),
    )
    note_ttl_days: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Days a note (remembered through the tools, the API or MCP without a topic) is kept after it was last "
            "written (or read, with retention_refresh_on_read), with its search entry. Unset: kept until deleted"
        ),
    )
    profile_ttl_days: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Days a profile entry is kept after it was last written (or read, with retention_refresh_on_read), with "
            "its search entry and its past values; its revision history stays, as for a deleted entry. Unset: kept "
            "until deleted"
        ),
    )
    refresh_on_read: bool = Field(
        default=False,
        description=(
            "Reading a record starts its time to live again: a search hit, the profile, events and a session's recent"
            " messages as recall and the API read them (false: a record lives its time from its last write)"
        ),
    )
    max_memories_per_user: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Most records one user may keep: stored messages, event cards and notes, profile entries, memories added "
            "directly and LangGraph items; a write past it is refused with QuotaExceeded (HTTP 429) and nothing "
            "stored is touched. Unset: no limit"
        ),
    )
    max_bytes_per_user: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Most bytes (UTF-8) of text one user may keep in those records (a message's content, a card's summary, an"
            " entry's content, an item's JSON; vectors and indexes not counted); a write past it is refused with "
            "QuotaExceeded (HTTP 413). Unset: no limit"
        ),
    )
    gc_sweep_seconds: float = Field(
        default=3600.0,
        ge=0,
        description=(
            "How often a worker runs `memlane gc` over every user: history, session, event and dedupe entries naming "
            "expired records, sessions with no message left, search entries whose record is gone, quota usage of what"
            " was deleted or expired; 0 never"
        ),
    )

    def ttl_seconds(self, kind: str) -> float | None:
        """The time to live of a kind of record ("message", "event", "note", "profile"), in seconds."""
        days = {
            "message": self.message_ttl_days,
            "event": self.event_ttl_days,
            "note": self.note_ttl_days,
            "profile": self.profile_ttl_days,
        }[kind]
        return None if days is None else days * 86_400

    @property
    def expires(self) -> bool:
        """Whether any kind of record has a time to live."""
        return any(
            days is not None
            for days in (self.message_ttl_days, self.event_ttl_days, self.note_ttl_days, self.profile_ttl_days)
        )

    @property
    def has_quota(self) -> bool:
        return self.max_memories_per_user is not None or self.max_bytes_per_user is not None
