"""What one browser tab of the chat app shows (its user, session and chat) and the messages it
has waiting for a reply: the state the handlers (ui/handlers.py) keep per tab."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from memlane.ui.chat import shown_line


def _settled() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


@dataclass
class PendingMessage:
    """A message waiting for its reply, with the switches in force when it was sent."""

    text: str
    user_id: str  # "" when sent before the page restored its user (the field was empty)
    session_id: str
    persona: str
    recall_on: bool
    save_on: bool
    speaker: str = ""  # who says it when not the user (朋友A in a group chat)
    during_switch: bool = False  # sent while a switch of user or session was on its way
    # the lines of the same message before `text` (a group chat pasted whole): (speaker, text) each
    earlier: tuple[tuple[str, str], ...] = ()

    def shown(self) -> list[dict[str, Any]]:
        """The message as the chat draws it: one user line per speaker's line."""
        return [
            {"role": "user", "content": shown_line(text, speaker or None)}
            for speaker, text in [*self.earlier, (self.speaker, self.text)]
        ]


@dataclass
class TabChat:
    """One browser tab as this app shows it: its user, session and chat, and the messages
    waiting for a reply.

    The tab, not the fields a message is sent with, says whose chat a reply goes on: while a
    switch of user or session is on its way, the browser still shows the old ones. A message
    sent then waits for the switch and goes to what it shows, and a reply's earlier turns are
    the chat shown for its own user and session, or that session's stored history: never
    another user's chat still on screen (it would be sent to the model and stored as theirs)."""

    pending: deque[PendingMessage] = field(default_factory=deque)
    draining: bool = False
    shown: list[dict[str, Any]] | None = None  # the chat as last shown
    shown_of: tuple[str, str] | None = None  # whose chat that is: (user, session)
    user: str | None = None  # the user shown, from the moment a switch to them began
    started: str | None = None  # the session "New session" started last
    view: int = 0  # counts the switches of the chat and the session
    switching: int = 0  # switches on their way
    replying_to: tuple[str, str] | None = None  # the (user, session) a reply streams into now
    _switched: asyncio.Event = field(default_factory=_settled, repr=False)  # set while none is
    _opened: asyncio.Event = field(default_factory=asyncio.Event, repr=False)  # set once a chat is shown

    @contextmanager
    def switch(self) -> Iterator[int]:
        """A switch of the chat and the session (another user or session) on its way; gives its
        number for `show`. An answer that a later switch overtook leaves the chat and the
        session to that one, whichever answers last."""
        self.view += 1
        self.switching += 1
        self._switched.clear()
        try:
            yield self.view
        finally:
            self.switching -= 1
            if not self.switching:
                self._switched.set()

    def show(self, view: int, user_id: str, session_id: str, chat: list[dict[str, Any]]) -> bool:
        """What switch `view` shows, kept for the replies after it; False when it was overtaken."""
        if self.overtaken(view):
            return False
        self.shown, self.shown_of = list(chat), (user_id, session_id)
        self._opened.set()
        return True

    def overtaken(self, view: int) -> bool:
        return self.view != view

    def keeps(self, user_id: str, session_id: str, *, first: bool) -> bool:
        """Whether a switch that lands on (user, session) leaves the chat on screen as it is: it
        shows that chat already, and a reply streams into it, or this is the tab's first switch
        (the page's own, restoring its user: what the tab shows then came from this page, after
        the page loaded, and the store may not hold it yet, as a failed reply's note). Any other
        switch reads the chat from the store."""
        here = (user_id, session_id)
        return self.shown is not None and self.shown_of == here and (first or self.replying_to == here)

    def chat_after_switch(self, chat: list[dict[str, Any]]) -> Any:
        """What a switch that landed draws in the chat: `chat`, or nothing when a message sent
        during the switch waits and no reply streams. The reply to that message then draws the
        chat, with the message: the switch's answer may reach the browser after the reply's
        first values (an instant failure's note among them) and would wipe them."""
        if self.replying_to is None and any(item.during_switch for item in self.pending):
            return gr.skip()
        return chat

    def resumed(self, view: int, user_id: str, session_id: str) -> int:
        """The switch a reply into (user, session) draws under: `view`, or the switch that
        overtook it when that one landed on the reply's own chat and none is on its way."""
        if self.overtaken(view) and not self.switching and self.shown_of == (user_id, session_id):
            return self.view
        return view

    async def switched(self) -> None:
        """Until no switch is on its way."""
        await self._switched.wait()

    async def opened(self) -> None:
        """Until the tab has shown a chat (the page's own switch restores its user)."""
        await self._opened.wait()

    def showing(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The chat with the messages still waiting shown after it."""
        return [*history, *(line for item in self.pending for line in item.shown())]
