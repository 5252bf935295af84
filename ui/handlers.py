"""The chat app's handlers: one module-level function per thing the page does (what each browser
tab shows and has waiting is ui/tabs.py).

Each handler takes the `ChatApp` (the service and the browser tabs) first, so it can be
imported and called alone (tests/ui/test_app_handlers.py); `ui/app.py` lays out the components
and binds them. The tables the panel shows (profile, search) are made here too.
"""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from html import escape
from typing import Any

import gradio as gr
import pandas as pd

from memlane.doors import render_svg
from memlane.persistence import DEFAULT_SESSION
from memlane.store.hits import WEAK_RELEVANCE
from memlane.ui.chat import RECALL_ID_PREFIX, REPLY_FAILED_ID, spoken_lines
from memlane.ui.panel import recall_markdown, recall_title
from memlane.ui.sample import SAMPLE_USER
from memlane.ui.service import (
    ChatService,
    MemoryStatus,
    ReplyFailed,
    new_session_id,
)
from memlane.ui.tabs import PendingMessage, TabChat

DEFAULT_USER = "demo-user"
PROFILE_COLUMNS = ["entry", "content", "conf", "since", "id"]
SEARCH_COLUMNS = ["score", "kind", "text", "when", "id"]
# fixed widths for the short columns (dates and ids on one line); the text column takes the rest
PROFILE_WIDTHS: list[str | int] = ["20%", "40%", "9%", "17%", "14%"]
SEARCH_WIDTHS: list[str | int] = ["14%", "12%", "41%", "18%", "15%"]  # the score column holds "0.02 weak"
# at most this wide (a phone) the tables' columns are as wide as their words, in em, and scroll sideways
PHONE_WIDTH = 640
PHONE_PROFILE_EMS = [9.8, 12.4, 4.4, 7.6, 6.8]  # entry and content in view (324 px), the rest a swipe away
PHONE_SEARCH_EMS = [6.6, 5.6, 10.6, 7.6, 6.8]  # score, kind and text in view
TABLE_HEIGHT = 560  # pixels: about ten one-line rows before the table scrolls
POLL_SECONDS = 0.5

CSS = """
#memory-status { min-height: 1.6em; color: var(--body-text-color-subdued); }
#no-model { border-left: 4px solid #e0a000; padding-left: 8px; }
#memory-graph img { max-width: 100%; height: auto; }
#memory-graph p { margin: 4px 0 0; color: var(--body-text-color-subdued); }
/* numbers, dates and ids never break inside: one line each, in their fixed-width columns */
#profile [data-col="2"] span, #profile [data-col="3"] span, #profile [data-col="4"] span,
#search-results [data-col="0"] span, #search-results [data-col="1"] span,
#search-results [data-col="3"] span, #search-results [data-col="4"] span,
#profile th span, #search-results th span { white-space: nowrap; word-break: normal; }
""" + "".join(
    # on a phone the columns keep the width their words need (a share of 324 px cut `conf` to "cc")
    # and the table scrolls sideways inside its frame, headers with it
    f"@media (max-width: {PHONE_WIDTH}px) {{ "
    + f"{table} table {{ width: max-content !important; min-width: 100%; }} "
    + " ".join(
        f"{table} [data-heading='{index}'], {table} [data-col='{index}'] "
        f"{{ width: {em}em !important; min-width: {em}em !important; max-width: {em}em !important; }}"
        for index, em in enumerate(widths)
    )
    + " }\n"
    for table, widths in (("#profile", PHONE_PROFILE_EMS), ("#search-results", PHONE_SEARCH_EMS))
)


def graph_html(status: MemoryStatus | None = None) -> str:
    """The memory graph as an image, the steps of the current or last run coloured, and a
    line saying which step works now. An <img> keeps the SVG's styles out of the page."""
    running, done = (status.running, status.done) if status is not None else ((), ())
    svg = render_svg(running=running, done=done)
    source = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
    if running:
        line = "step in progress: " + ", ".join(running)
    elif done:
        line = "last run: " + " → ".join(done)
    else:
        line = "no memory run yet"
    alt = f"memory graph; {line}"
    return f'<img src="{source}" alt="{escape(alt)}" data-running="{escape(" ".join(running))}"><p>{escape(line)}</p>'


def with_session(choices: list[tuple[str, str]], *session_ids: str | None) -> list[tuple[str, str]]:
    """The session list, with the shown (or just started) sessions in it before their first
    message is stored."""
    for session_id in session_ids:
        if session_id and all(value != session_id for _, value in choices):
            choices = [(session_id, session_id), *choices]
    return choices


def data_table(rows: list[list[Any]], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def short_id(memory_id: str) -> str:
    """`profile:e0c4803ab81b…` → `e0c4803a`, `message:sample-zh-1-3` → `…zh-1-3`: eight characters
    that tell the rows apart (the kind has a column of its own, or is the table's); clicks use
    the full id."""
    _, _, rest = str(memory_id).rpartition(":")
    rest = rest or str(memory_id)
    if len(rest) <= 8:
        return rest
    return rest[:8] if re.fullmatch(r"[0-9a-f]{8,}", rest) else "…" + rest[-7:]


def short_time(when: str) -> str:
    """`2026-11-24 02:11` → `11-24 02:11`: the date and time on one line in a narrow column."""
    return when[5:] if len(when) == 16 and when[4] == "-" else when


def profile_table(rows: list[list[Any]]) -> tuple[pd.DataFrame, list[str]]:
    """The profile as shown (topic / subtopic, content, confidence, when, short id), and the
    full ids row by row. rows: `ChatService.profile_rows`."""
    shown = [
        [f"{topic} / {subtopic}", content, f"{confidence:.2f}", short_time(updated), short_id(entry_id)]
        for topic, subtopic, content, confidence, updated, entry_id in rows
    ]
    return data_table(shown, PROFILE_COLUMNS), [str(row[-1]) for row in rows]


def search_table(rows: list[list[Any]]) -> tuple[pd.DataFrame, list[str]]:
    """The search hits as shown (their relevance, kind, text, when it was said, short id), and
    the full ids row by row. rows: `ChatService.search_rows`, best first (their sources are in the
    memories a reply used)."""
    shown = [  # a weak match says so beside its score (under WEAK_RELEVANCE: fewer than one in ten hold the answer)
        [
            f"{score:.2f}" + (" weak" if score < WEAK_RELEVANCE else ""),
            kind,
            text,
            short_time(said_at),
            short_id(memory_id),
        ]
        for score, kind, text, said_at, _sources, memory_id in rows
    ]
    return data_table(shown, SEARCH_COLUMNS), [str(row[-1]) for row in rows]


@dataclass
class ChatApp:
    """What the app's handlers share: the service, and per browser tab (Gradio's session hash)
    its chat, user and session. Each handler is a module-level function taking it first;
    `build_app` binds them to one."""

    service: ChatService
    tabs: dict[str, TabChat] = field(default_factory=dict)
    recall_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))  # each folded block its own id

    def tab_of(self, request: gr.Request | None) -> TabChat:
        return self.tabs.setdefault(_tab_key(request), TabChat())


def _tab_key(request: gr.Request | None) -> str:
    return getattr(request, "session_hash", None) or ""


def _user(user_id: str | None) -> str:
    return (user_id or "").strip() or DEFAULT_USER


# --- the handlers: module-level, the app first ------------------------------------------------


async def panel(app: ChatApp, user_id: str):
    """The memory panel: the status line, the profile table and its ids, the timeline, the status version."""
    service = app.service
    user_id = _user(user_id)
    status = service.status(user_id)
    table, ids = profile_table(await service.profile_rows(user_id))
    await service.refresh_parked(user_id)
    return (service.status_line(user_id), table, ids, await service.timeline_markdown(user_id), status.version)


def enqueue(
    app: ChatApp,
    text: str,
    user_id: str,
    session_id: str,
    persona: str,
    recall_on: bool,
    save_on: bool,
    speaker: str,
    request: gr.Request,
):
    """Take a message at once (even while a reply streams): it waits in the tab's queue.

    The message is the Speaker field's person's when it names one; else each of its lines that
    starts with a name and a colon is that person's ("朋友A: …", "Alice: I …": `spoken_lines`),
    the rest the user's own. Sent with the user field empty (the page has not restored its user
    yet), it goes to the chat the page shows once it does, not to the default user."""
    if text.strip():
        tab = app.tab_of(request)
        unnamed = not (user_id or "").strip()
        named = (speaker or "").strip()
        lines = [(named, text.strip())] if named else spoken_lines(text)
        *earlier, (last_speaker, said) = [(who or "", line) for who, line in lines]
        tab.pending.append(
            PendingMessage(
                said,
                "" if unnamed else _user(user_id),
                session_id or DEFAULT_SESSION,
                persona,
                recall_on,
                save_on,
                last_speaker,
                during_switch=tab.switching > 0 or unnamed,
                earlier=tuple(earlier),
            )
        )
    return ""


async def earlier_turns(
    app: ChatApp, tab: TabChat, item: PendingMessage, browser_chat: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """The chat a reply to `item` follows: the tab's, when it is the chat of the item's user and
    session (it may hold more than the browser has yet: the last chunks, a failure shown); else
    that session's stored history. The browser's only in a tab no switch has shown (handlers
    called alone)."""
    if tab.shown_of is None:
        return list(browser_chat or [])
    if tab.shown is not None and tab.shown_of == (item.user_id, item.session_id):
        return list(tab.shown)
    return await app.service.history(item.user_id, item.session_id)


async def drain(app: ChatApp, history: list[dict[str, Any]], request: gr.Request):
    """Answer the tab's waiting messages one after another, streaming each reply.

    One drain runs per tab; a drain started while another runs leaves the chat to it. A switch
    of user or session on its way answers first; one that comes while a reply streams takes
    the screen, and the reply goes on into its own session unseen, unless the switch landed
    on that session again (then the reply draws on).
    """
    service = app.service
    tab = app.tab_of(request)
    if tab.draining or not tab.pending:
        yield gr.skip()
        return
    tab.draining = True
    browser_chat = history
    drawn: int | None = None  # the switch whose chat this drain drew last
    view: int  # the switch the reply draws under, set before each reply streams

    def screen(item: PendingMessage, chat: list[dict[str, Any]]) -> Any:
        """The chat to draw, kept as the tab's, or nothing once a switch took the screen to
        another chat (Gradio draws a stream's last value again when it ends, so the last one must
        be nothing too). A switch that landed on the reply's own chat leaves it drawing."""
        nonlocal drawn, view
        view = tab.resumed(view, item.user_id, item.session_id)
        if not tab.show(view, item.user_id, item.session_id, chat):
            return gr.skip()
        drawn = view
        return tab.showing(chat)

    try:
        while True:
            if not tab.pending:
                if drawn is not None and tab.overtaken(drawn):
                    drawn = None
                    yield gr.skip()
                    continue  # (a message may have come meanwhile)
                break
            await tab.switched()
            if not tab.pending:
                continue
            if not tab.pending[0].user_id and tab.shown_of is None:
                await tab.opened()  # sent before the page showed its user: to the chat it shows
                continue
            item = tab.pending.popleft()
            if item.during_switch and tab.shown_of is not None:  # sent to what the switch shows
                item = replace(item, user_id=tab.shown_of[0], session_id=tab.shown_of[1])
            view = tab.view  # the switch the reply draws under (`screen`)
            history = await earlier_turns(app, tab, item, browser_chat)
            prior = list(history)
            history += [*item.shown(), {"role": "assistant", "content": ""}]
            tab.replying_to = (item.user_id, item.session_id)
            yield screen(item, history)
            try:
                async for answer in service.stream_reply(
                    item.user_id,
                    item.session_id,
                    item.text,
                    prior,
                    persona=item.persona,
                    recall_enabled=item.recall_on,
                    auto_save_enabled=item.save_on,
                    speaker=item.speaker or None,
                    earlier_lines=item.earlier,
                ):
                    history[-1] = {"role": "assistant", "content": answer}
                    yield screen(item, history)
            except ReplyFailed as failure:
                if not history[-1]["content"]:
                    history.pop()  # nothing streamed before the failure
                history.append({"role": "assistant", "content": f"⚠️ {failure}", "metadata": {"id": REPLY_FAILED_ID}})
                yield screen(item, history)
                continue
            finally:
                tab.replying_to = None
            recalled = service.used_memories(item.user_id, item.session_id, item.text) if item.recall_on else None
            if recalled is not None:
                # folded under the reply; `history_messages` never sends it to the model
                metadata = {
                    "title": recall_title(recalled),
                    "id": f"{RECALL_ID_PREFIX}:{next(app.recall_ids)}",
                    "status": "done",
                }
                history.append({"role": "assistant", "content": recall_markdown(recalled), "metadata": metadata})
                yield screen(item, history)
    finally:
        tab.replying_to = None
        tab.draining = False  # no await since the last look at `pending`: nothing slips through


def close_tab(app: ChatApp, request: gr.Request) -> None:
    app.tabs.pop(_tab_key(request), None)


async def poll(app: ChatApp, user_id: str, seen_version: int):
    """Refresh the status, and the panel when memory work reported since last time."""
    user_id = _user(user_id)
    status = app.service.status(user_id)
    if status.version == seen_version:  # the status line still follows the breakers' countdown
        return app.service.status_line(user_id), gr.update(), gr.update(), gr.update(), seen_version
    return await panel(app, user_id)


async def switch_user(app: ChatApp, user_id: str, request: gr.Request):
    """Show another user's latest session; leaving the field unchanged changes nothing.

    The tab's user is the one a switch began for, not the one last answered: Enter then a
    click elsewhere sends the same switch twice (submit, blur), and the second changes nothing."""
    if _user(user_id) == app.tab_of(request).user:
        return gr.skip()
    return await show_user(app, user_id, request)


async def show_user(app: ChatApp, user_id: str, request: gr.Request | None):
    """The user's latest session in the chat, their sessions listed by title, their panel.

    A "New session" clicked before this answers keeps its session and its empty chat; a switch
    to another user meanwhile leaves everything to that switch."""
    user_id = _user(user_id)
    tab = app.tab_of(request)
    previous, tab.user = tab.user, user_id
    with tab.switch() as view:
        try:
            choices = await app.service.session_choices(user_id) or [(DEFAULT_SESSION, DEFAULT_SESSION)]
            latest = choices[0][1]
            history = await app.service.history(user_id, latest)
            shown = await panel(app, user_id)
        except BaseException:
            if tab.user == user_id:
                tab.user = previous  # not shown: Enter in the user field tries again
            raise
        if tab.user != user_id:
            return gr.skip()
        session = gr.update(choices=choices, value=latest)
        if tab.keeps(user_id, latest, first=previous is None):  # a message sent as the page opened
            tab.show(view, user_id, latest, tab.shown or [])
            history = gr.skip()
        elif tab.show(view, user_id, latest, history):
            history = tab.chat_after_switch(history)
        else:
            session, history = gr.skip(), gr.skip()
    editor = gr.update(visible=False)  # it showed the previous user's entry
    return (session, history, *shown, user_id, editor)


def restore_user(saved_user: str | None):
    """The user this browser had before a reload."""
    return _user(saved_user)


async def switch_session(app: ChatApp, user_id: str, session_id: str, request: gr.Request):
    tab = app.tab_of(request)
    user_id, session_id = _user(user_id), session_id or DEFAULT_SESSION
    with tab.switch() as view:
        history = await app.service.history(user_id, session_id)
        return tab.chat_after_switch(history) if tab.show(view, user_id, session_id, history) else gr.skip()


async def start_session(app: ChatApp, user_id: str, session_id: str, request: gr.Request):
    tab = app.tab_of(request)
    user_id = _user(user_id)
    with tab.switch() as view:
        fresh = new_session_id()
        tab.started = fresh  # first: a timer tick that relists the sessions meanwhile keeps it
        await app.service.end_session(user_id, session_id or DEFAULT_SESSION)
        choices = with_session(await app.service.session_choices(user_id), fresh)
        if not tab.show(view, user_id, fresh, []):
            return gr.skip(), gr.skip()
    return gr.update(choices=choices, value=fresh), tab.chat_after_switch([])


async def poll_progress(app: ChatApp, user_id: str, session_id: str, seen: list[Any] | None, request: gr.Request):
    """Redraw the graph when a run's step changed; relist the sessions when one got a title."""
    user_id = _user(user_id)
    status = app.service.status(user_id)
    now = [user_id, status.progress, status.titles]
    if now == seen:
        return gr.update(), gr.update(), seen
    graph = graph_html(status) if seen is None or now[:2] != seen[:2] else gr.update()
    sessions = gr.update()
    if seen is None or now[::2] != seen[::2]:
        # a tick that read the session field before "New session" answered still lists the new one:
        # the tab's newest session is read after the listing, which a "New session" may overtake
        choices = await app.service.session_choices(user_id)
        sessions = gr.update(choices=with_session(choices, session_id, app.tab_of(request).started))
    return graph, sessions, now


async def open_entry(app: ChatApp, user_id: str, entry_id: str):
    """The clicked profile entry in the editor, with its history."""
    user_id = _user(user_id)
    entry = await app.service.profile_entry(user_id, entry_id) if entry_id else None
    if entry is None:
        return gr.update(visible=False), gr.update(), gr.update(), ""
    return (
        gr.update(visible=True),
        entry.content,
        entry.confidence,
        await app.service.entry_history(user_id, entry_id),
    )


async def save_entry(app: ChatApp, user_id: str, entry_id: str, content: str, confidence: float | None):
    user_id = _user(user_id)
    await app.service.edit_entry(user_id, entry_id, content, confidence)
    return (await app.service.entry_history(user_id, entry_id), *await panel(app, user_id))


async def load_sample(app: ChatApp, request: gr.Request):
    """Fill the panel with the bundled sample, remembered by the scripted memory model."""
    await app.service.load_sample()
    return await show_user(app, SAMPLE_USER, request)


async def search(app: ChatApp, user_id: str, query: str):
    return search_table(await app.service.search_rows(_user(user_id), query))


async def delete(app: ChatApp, user_id: str, entry_id: str):
    await app.service.delete_entry(_user(user_id), entry_id)
    return ("", gr.update(visible=False), *await panel(app, user_id))


def ask_forget(user_id: str):
    user_id = _user(user_id)
    question = (
        f"**Forget everything of `{user_id}`?** Their profile, events, searchable memories "
        "and every session's messages are deleted; this cannot be undone."
    )
    return gr.update(visible=True), question


async def forget(app: ChatApp, user_id: str, request: gr.Request):
    tab = app.tab_of(request)
    with tab.switch() as view:
        await app.service.forget_user(_user(user_id))
        shown = tab.show(view, _user(user_id), tab.shown_of[1] if tab.shown_of else DEFAULT_SESSION, [])
        chat = tab.chat_after_switch([]) if shown else gr.skip()
    hidden = gr.update(visible=False)  # the question, and the editor of an entry now gone
    return (hidden, hidden, chat, data_table([], SEARCH_COLUMNS), [], *await panel(app, user_id))


async def remember_now(app: ChatApp, user_id: str):
    await app.service.remember_now(_user(user_id))
    return app.service.status(_user(user_id)).text


def select_id(ids: list[str], event: gr.SelectData):
    """Clicking a row of a table puts its (full) id in the delete box."""
    shown = (getattr(event, "row_value", None) or [None])[-1]  # the clicked row, even in a sorted table
    matches = [full for full in ids if short_id(full) == shown]
    if len(matches) == 1:
        return matches[0]
    row = event.index[0] if isinstance(event.index, (list, tuple)) else event.index
    try:
        return ids[row]
    except (IndexError, TypeError):
        return gr.update()


def hide():
    return gr.update(visible=False)


def sample_user() -> str:
    return SAMPLE_USER
