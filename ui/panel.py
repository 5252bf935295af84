"""What the app writes about memory, as Markdown: the memories a reply used, an entry's
history, the timeline's event cards with what each changed. Pure functions, no Gradio."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from memlane import Event, Recall
from memlane.recall import RecallItem
from memlane.store.records import ProfileChange, ProfileRevision, StoreItem

# how many sources a searched memory lists before "and N more"
MAX_SOURCES = 3


def when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def one_line(text: str, limit: int = 400) -> str:
    """`text` on one line, cut at `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cell(text: str) -> str:
    """`text` safe inside a Markdown table cell."""
    return one_line(text, 300).replace("|", "\\|")


def _sources(item: RecallItem) -> str:
    ids = item.source_message_ids
    if not ids:
        return ""
    shown = ", ".join(f"`{source}`" for source in ids[:MAX_SOURCES])
    more = f" and {len(ids) - MAX_SOURCES} more" if len(ids) > MAX_SOURCES else ""
    return f" · sources: {shown}{more}"


def recall_title(recalled: Recall) -> str:
    """The folded block's title: what kinds of memory the reply used."""
    parts = []
    if recalled.profile:
        parts.append(f"{len(recalled.profile)} profile line{'s' if len(recalled.profile) != 1 else ''}")
    if recalled.summary:
        parts.append("session summary")
    if recalled.memories:
        parts.append(f"{len(recalled.memories)} searched memor{'ies' if len(recalled.memories) != 1 else 'y'}")
    if recalled.recent:
        parts.append(f"{len(recalled.recent)} recent message{'s' if len(recalled.recent) != 1 else ''}")
    return "Memories used: " + (", ".join(parts) if parts else "none")


def recall_markdown(recalled: Recall) -> str:
    """The memories a reply used, section by section, with scores and sources."""
    lines: list[str] = []
    if recalled.profile:
        lines.append("**Profile**")
        for item in recalled.profile:
            details = [f"confidence {item.confidence:.2f}" if item.confidence is not None else ""]
            details.append(f"relevance {item.relevance:.2f}" if item.relevance is not None else "")
            details.append(item.when or "")
            shown = " · ".join(part for part in [*details, *item.earlier] if part)
            lines.append(f"- {one_line(item.text)}" + (f" · {shown}" if shown else ""))
    if recalled.summary:
        lines.append("**Session summary**")
        lines.append(f"- {one_line(recalled.summary.text)}")
    if recalled.memories:
        lines.append("**Searched memories**")
        for item in recalled.memories:
            score = f"`{item.relevance:.2f}` " if item.relevance is not None else ""
            kind = (
                "message"
                if item.layer == "message"
                else "event"
                if not (item.memory_id or "").startswith("profile:")
                else "profile"
            )
            dated = f" · {item.when}" if item.when else ""
            status = f" · earlier, until {item.until}" if item.status == "earlier" else ""
            lines.append(f"- {score}{kind}: {one_line(item.text)}{dated}{status}{_sources(item)}")
    if recalled.recent:
        lines.append("**Recent messages**")
        lines.extend(f"- {one_line(item.text)}" for item in recalled.recent)
    footer = f"{recalled.tokens} of {recalled.budget} tokens"
    if recalled.search_query and recalled.search_query != recalled.query:
        footer += f" · searched for “{one_line(recalled.search_query, 120)}”"
    if recalled.dropped:
        footer += f" · {recalled.dropped} left out for the budget"
    lines.append(f"<sub>{footer}</sub>")
    return "\n".join(lines)


def actor_label(actor: str) -> str:
    """Who made a change, as the panel says it."""
    kind, _, rest = actor.partition(":")
    if kind == "run":
        return f"memory run (event {rest[:8]}…)" if len(rest) > 9 else f"memory run ({rest or '?'})"
    if actor == "user":
        return "edited in the app"
    if kind == "api":
        return f"API ({rest})" if rest else "API"
    return actor


def _state(content: str | None, confidence: float | None) -> str:
    if content is None and confidence is None:
        return "—"
    text = cell(content) if content is not None else ""
    return f"{text} ({confidence:.2f})" if confidence is not None else text


def history_markdown(revisions: Sequence[ProfileRevision]) -> str:
    """An entry's revisions, oldest first: when, who, what it was before and after."""
    if not revisions:
        return "_No history recorded for this entry._"
    rows = ["| when | by | change | before | after |", "|---|---|---|---|---|"]
    for revision in revisions:
        rows.append(
            f"| {when(revision.at)} | {cell(actor_label(revision.actor))} | {revision.action} | "
            f"{_state(revision.before_content, revision.before_confidence)} | "
            f"{_state(revision.after_content, revision.after_confidence)} |"
        )
    return "\n".join(rows)


def _change_line(change: ProfileChange) -> str:
    slot = f"**{one_line(change.topic, 80)} / {one_line(change.subtopic, 80)}**"
    if change.action == "add":
        return f"- added {slot}: {one_line(change.content)}"
    if change.action == "update":
        before = f"~~{one_line(change.previous_content)}~~ → " if change.previous_content else ""
        return f"- updated {slot}: {before}{one_line(change.content)}"
    gone = change.previous_content or change.content
    return f"- deleted {slot}" + (f": ~~{one_line(gone)}~~" if gone else "")


def item_markdown(item: StoreItem) -> str:
    """One LangGraph store item an agent saved: when, its namespace and key, what it says."""
    shown = item.text or json.dumps(item.value, ensure_ascii=False)
    labels = [label for label in item.namespace if label != item.user_id] or list(item.namespace)  # the user is implied
    path = " / ".join(one_line(label, 40) for label in [*labels, item.key])
    return f"- **{when(item.updated_at)}** `{path}`: {one_line(shown, 300)}"


def event_markdown(event: Event) -> str:
    """One event card: when, tags, the summary, and what it changed in the profile (a list)."""
    tags = " ".join(f"`{one_line(tag, 40)}`" for tag in event.tags)
    delta = [_change_line(change) for change in event.profile_delta] or ["_no profile change_"]
    return "\n".join(
        [
            f"**{when(event.created_at)}** {tags}  ",
            one_line(event.summary, 1000),
            "",
            *delta,
            "",
            f"<sub>event:{event.id}</sub>",
        ]
    )
