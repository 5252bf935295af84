"""The Gradio chat app: a chat that streams, then remembers, beside a memory panel.

    build_app(settings, chat_model=..., memory_model=...)  →  gr.Blocks (tests inject scripted models)
    launch(settings, host, port)                            →  `memlane demo`

Each handler is a module-level function of `ui/handlers.py` taking the `ChatApp` (the service and
the browser tabs' chats) first; `build_app` lays out the components and binds the handlers to
them. Importing this module changes nothing (no environment variable is set before `launch`).

The reply streams token by token; storing the turn and the memory-graph run happen in the
background afterwards, and a timer shows their progress ("remembering…" → "remembered: ...")
and refreshes the panel when a run lands, without holding up the next message.

A line is the user's own unless the Speaker field beside the message box names someone, or
the line starts with a name and a colon ("朋友A: …", `memlane.ui.chat.spoken_by`): then it is
that person's, shown with their name in bold.

Under each reply a folded block shows the memories it used (never sent back to the model).
The panel edits profile entries and shows their history, lists the facts held for review (confirm or
drop: ui/review.py), draws the user's people and places (ui/relations_tab.py), lists sessions by title, draws
the memory graph with the step in progress, lists what each event changed, and can fill
itself with a sample conversation remembered by a scripted model (no model needed).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import MethodType
from typing import Any

import gradio as gr
from langchain_core.language_models.chat_models import BaseChatModel

from memlane import MemoryStore
from memlane.config import Settings, get_settings
from memlane.models import HOW_TO_CONFIGURE
from memlane.persistence import DEFAULT_SESSION
from memlane.ui.handlers import (
    CSS,
    DEFAULT_USER,
    POLL_SECONDS,
    PROFILE_COLUMNS,
    PROFILE_WIDTHS,
    SEARCH_COLUMNS,
    SEARCH_WIDTHS,
    TABLE_HEIGHT,
    ChatApp,
    ask_forget,
    close_tab,
    data_table,
    delete,
    drain,
    enqueue,
    forget,
    graph_html,
    hide,
    load_sample,
    open_entry,
    panel,
    poll,
    poll_progress,
    remember_now,
    restore_user,
    sample_user,
    save_entry,
    search,
    select_id,
    start_session,
    switch_session,
    switch_user,
)
from memlane.ui.relations_tab import forget_from_picture, relations_view
from memlane.ui.review import REVIEW_COLUMNS, REVIEW_WIDTHS, confirm_held, drop_held, review_list
from memlane.ui.service import ChatService


def build_app(
    settings: Settings | None = None,
    *,
    chat_model: BaseChatModel | None = None,
    memory_model: BaseChatModel | None = None,
    store: MemoryStore | None = None,
    service: ChatService | None = None,
) -> gr.Blocks:
    """The app's Blocks, its components wired to the handlers above; models default to the
    settings' (None when not configured)."""
    settings = settings or get_settings()
    service = service or ChatService(settings, chat_model=chat_model, memory_model=memory_model, store=store)
    app = ChatApp(service)

    def on(handler: Callable[..., Any]) -> Callable[..., Any]:
        # a bound method: Gradio passes the components' values (and gr.Request) after the app
        return MethodType(handler, app)

    with gr.Blocks(title="memlane", analytics_enabled=False) as demo:
        gr.Markdown("# memlane · chat with long-term memory")
        if not service.has_chat_model:
            gr.Markdown(HOW_TO_CONFIGURE + " The memory panel works without a model.", elem_id="no-model")
        with gr.Row():
            with gr.Column(scale=3):
                with gr.Row():
                    # empty until the page has loaded and restored this browser's user (see restore_user)
                    user = gr.Textbox(value="", placeholder=DEFAULT_USER, label="User", elem_id="user")
                    session = gr.Dropdown(
                        choices=[DEFAULT_SESSION],
                        value=DEFAULT_SESSION,
                        allow_custom_value=True,
                        label="Session",
                        elem_id="session",
                    )
                    new_session = gr.Button("New session", size="sm")
                chatbot = gr.Chatbot(label="Chat", height=420, elem_id="chat")
                with gr.Row(equal_height=True):
                    # who says the message: empty is the user; "朋友A: …" typed in the message says so too
                    speaker = gr.Textbox(
                        value="", placeholder="you", label="Speaker", scale=1, min_width=100, elem_id="speaker"
                    )
                    message = gr.Textbox(
                        placeholder="Message (someone else's line: “Alice: …”, “朋友A：…”)",
                        label="Message",
                        scale=5,
                        elem_id="message",
                        autofocus=True,
                    )
                    send = gr.Button("Send", variant="primary", scale=1, min_width=80, elem_id="send")
                with gr.Row():
                    status = gr.Markdown("", elem_id="memory-status")
                    remember = gr.Button("Remember now", size="sm", scale=0, min_width=130, elem_id="remember-now")
                with gr.Accordion("Persona and switches", open=False):
                    persona = gr.Textbox(value=settings.turns.app_persona, lines=3, label="Persona / system prompt")
                    with gr.Row():
                        recall_on = gr.Checkbox(value=settings.recall.enabled, label="Recall memories")
                        save_on = gr.Checkbox(value=settings.turns.auto_save_enabled, label="Save to memory")
            with gr.Column(scale=3):  # as wide as the chat: the tables need the room
                gr.Markdown("## Memory")
                with gr.Tab("Profile"):
                    profile = gr.Dataframe(
                        value=data_table([], PROFILE_COLUMNS),
                        headers=PROFILE_COLUMNS,
                        interactive=False,
                        wrap=True,
                        elem_id="profile",
                        column_widths=PROFILE_WIDTHS,
                        max_height=TABLE_HEIGHT,
                    )
                with gr.Tab("Timeline"):
                    timeline = gr.Markdown(elem_id="timeline")
                with gr.Tab("Search"):
                    with gr.Row():
                        query = gr.Textbox(
                            placeholder="search memories", show_label=False, scale=4, elem_id="search-query"
                        )
                        search_button = gr.Button("Search", scale=1)
                    results = gr.Dataframe(
                        value=data_table([], SEARCH_COLUMNS),
                        headers=SEARCH_COLUMNS,
                        interactive=False,
                        wrap=True,
                        elem_id="search-results",
                        column_widths=SEARCH_WIDTHS,
                        max_height=TABLE_HEIGHT,
                    )
                with gr.Tab("Memory graph"):
                    graph = gr.HTML(graph_html(), elem_id="memory-graph")
                # last: on a phone the tabs that do not fit go to a menu, and Review is the least used
                with gr.Tab("Review", elem_id="review-tab") as review_tab:
                    review_note = gr.Markdown(elem_id="review-note")
                    review_table = gr.Dataframe(
                        value=data_table([], REVIEW_COLUMNS),
                        headers=REVIEW_COLUMNS,
                        interactive=False,
                        wrap=True,
                        elem_id="review",
                        column_widths=REVIEW_WIDTHS,
                        max_height=TABLE_HEIGHT,
                    )
                    with gr.Row():
                        held_id = gr.Textbox(
                            placeholder="id (click a row)", show_label=False, scale=3, elem_id="held-id"
                        )
                        confirm_button = gr.Button("Confirm", size="sm", scale=1, elem_id="confirm-held")
                        drop_button = gr.Button("Drop", size="sm", scale=1, elem_id="drop-held")
                # the user's people, places and things as a picture (ui/relations_tab.py)
                with gr.Tab("People", elem_id="people-tab") as people_tab:
                    people_picture = gr.HTML(elem_id="people-picture")
                    with gr.Row():
                        people_target = gr.Textbox(
                            placeholder="a name, or relation:<id>", show_label=False, scale=3, elem_id="people-target"
                        )
                        people_forget = gr.Button("Forget", size="sm", scale=1, elem_id="people-forget")
                    people_note = gr.Markdown(elem_id="people-note")
                with gr.Row():
                    entry_id = gr.Textbox(placeholder="id (click a row)", show_label=False, scale=3, elem_id="entry-id")
                    delete_button = gr.Button("Delete entry", size="sm", scale=1)
                    forget_button = gr.Button("Forget me", variant="stop", size="sm", scale=1)
                with gr.Group(visible=False, elem_id="entry-editor") as entry_editor:
                    edit_content = gr.Textbox(label="Content", lines=2, elem_id="edit-content")
                    with gr.Row():
                        edit_confidence = gr.Slider(
                            0.0, 1.0, step=0.01, label="Confidence", elem_id="edit-confidence", scale=3
                        )
                        save_edit = gr.Button("Save edit", size="sm", scale=1, elem_id="save-edit")
                    entry_history = gr.Markdown(elem_id="entry-history")
                sample_button = gr.Button(
                    "Load a sample conversation (no model needed)", size="sm", elem_id="load-sample"
                )
                with gr.Group(visible=False, elem_id="forget-confirm") as forget_confirm:
                    forget_question = gr.Markdown()
                    with gr.Row():
                        forget_yes = gr.Button("Yes, forget everything", variant="stop", size="sm")
                        forget_no = gr.Button("Cancel", size="sm")
        seen_version = gr.State(0)
        # the user, kept in this browser's localStorage across reloads (not across restarts of the app:
        # its encryption key is made anew at each start)
        saved_user = gr.BrowserState(None, storage_key="memlane-user")
        profile_ids = gr.State([])
        result_ids = gr.State([])
        review_ids = gr.State([])
        timer = gr.Timer(POLL_SECONDS)
        seen_progress = gr.State(None)  # [user, step progress, titles] last drawn

        panel_outputs = [status, profile, profile_ids, timeline, seen_version]
        chat_inputs = [message, user, session, persona, recall_on, save_on, speaker]
        for trigger in (message.submit, send.click):
            # "multiple": a message sent while a reply streams is taken, not dropped; the
            # streaming event writes only the chat, never the message box being typed in
            trigger(
                on(enqueue), chat_inputs, [message], queue=False, trigger_mode="multiple", show_progress="hidden"
            ).then(on(drain), [chatbot], [chatbot], trigger_mode="multiple", show_progress="hidden")
        timer.tick(on(poll), [user, seen_version], panel_outputs, show_progress="hidden", queue=False)
        timer.tick(
            on(poll_progress),
            [user, session, seen_progress],
            [graph, session, seen_progress],
            show_progress="hidden",
            queue=False,
        )
        user_outputs = [session, chatbot, *panel_outputs, saved_user, entry_editor]
        demo.load(restore_user, [saved_user], [user], queue=False).then(on(switch_user), [user], user_outputs)
        user.submit(on(switch_user), [user], user_outputs)
        user.blur(on(switch_user), [user], user_outputs)
        session.input(on(switch_session), [user, session], [chatbot])
        new_session.click(on(start_session), [user, session], [session, chatbot])
        for trigger in (query.submit, search_button.click):
            trigger(on(search), [user, query], [results, result_ids])
        editor_outputs = [entry_editor, edit_content, edit_confidence, entry_history]
        profile.select(select_id, [profile_ids], [entry_id]).then(on(open_entry), [user, entry_id], editor_outputs)
        results.select(select_id, [result_ids], [entry_id]).then(hide, None, [entry_editor])
        save_edit.click(
            on(save_entry), [user, entry_id, edit_content, edit_confidence], [entry_history, *panel_outputs]
        )
        delete_button.click(on(delete), [user, entry_id], [entry_id, entry_editor, *panel_outputs])
        # the user field first, so the status line follows the sample's runs step by step
        sample_button.click(sample_user, None, [user], queue=False).then(
            on(load_sample), None, user_outputs, show_progress="hidden"
        )
        forget_button.click(ask_forget, [user], [forget_confirm, forget_question], queue=False)
        forget_no.click(hide, None, [forget_confirm], queue=False)
        forget_yes.click(
            on(forget), [user], [forget_confirm, entry_editor, chatbot, results, result_ids, *panel_outputs]
        )
        remember.click(on(remember_now), [user], [status])
        # the review tab: facts held under memory_min_confidence, confirmed into the profile or dropped
        review_outputs = [review_table, review_ids, review_note]
        review_tab.select(on(review_list), [user], review_outputs)
        review_table.select(select_id, [review_ids], [held_id])
        for button, handler in ((confirm_button, confirm_held), (drop_button, drop_held)):
            button.click(on(handler), [user, held_id], review_outputs).then(on(panel), [user], panel_outputs)
        people_tab.select(on(relations_view), [user], [people_picture])
        for switched in (user.submit, user.blur):  # never the previous user's picture under another user's name
            switched(on(relations_view), [user], [people_picture], show_progress="hidden")
        people_forget.click(on(forget_from_picture), [user, people_target], [people_picture, people_note])
        demo.unload(on(close_tab))
    setattr(demo, SERVICE_ATTRIBUTE, service)  # for tests and embedding apps: service_of(demo)
    return demo


def service_of(demo: gr.Blocks) -> ChatService:
    """The chat service behind an app `build_app` made."""
    service: ChatService = getattr(demo, SERVICE_ATTRIBUTE)
    return service


# the attribute of the Blocks that holds its ChatService (read it with service_of)
SERVICE_ATTRIBUTE = "memlane_service"
LAUNCH_OPTIONS: dict[str, Any] = {"share": False, "ssr_mode": False, "css": CSS}


def launch(
    settings: Settings | None = None,
    host: str = "127.0.0.1",
    port: int = 7860,
    *,
    block: bool = True,
    **launch_options: Any,
) -> gr.Blocks:
    """Serve the app: no share link, no analytics. The store, scheduler and embeddings start
    before it returns (or, with `block`, before it serves and waits); raises OSError when the port is taken."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # the Blocks say so too; this covers the rest of Gradio
    demo = build_app(settings)
    # run by Gradio on the server's event loop before launch() returns, where the service's clients must live
    demo.extra_startup_events.append(service_of(demo).warm_up)
    options = {**LAUNCH_OPTIONS, **launch_options}
    demo.queue(default_concurrency_limit=8).launch(
        server_name=host, server_port=port, prevent_thread_lock=not block, **options
    )
    return demo
