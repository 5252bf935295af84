"""The chat as Gradio holds it: which of its messages are the app's own notes, the text of a
message whatever the shape of its content, and the earlier turns a reply is sent with."""

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

# the metadata id of a chat message that reports a failed reply: shown, never sent to the model
REPLY_FAILED_ID = "memlane-reply-failed"
# the metadata ids of the folded "memories used" blocks start so ("memlane-recall:3"); shown only
RECALL_ID_PREFIX = "memlane-recall"


def shown_only(item: Any) -> bool:
    """Whether a chat message is the app's note (a failed reply, the memories a reply used),
    never part of the conversation sent to the model."""
    metadata = (item.get("metadata") if isinstance(item, dict) else None) or {}
    message_id = str(metadata.get("id") or "")
    return message_id == REPLY_FAILED_ID or message_id.startswith(RECALL_ID_PREFIX)


def content_text(content: Any) -> str:
    """The text of a chat message's content in any shape Gradio gives it.

    Gradio 6 hands content back as a list of blocks (`{"type": "text", "text": ...}`, files,
    components); older shapes are a plain string or one block. A file or component is not sent
    to the model: a note in its place says it was there.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "\n".join(text for text in (content_text(block) for block in content) if text)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        if content.get("type") == "file" or "file" in content or "path" in content:
            file = content["file"] if isinstance(content.get("file"), dict) else content
            name = file.get("orig_name") or os.path.basename(str(file.get("path") or "")) or "a file"
            return f"[{name} was attached here; its contents are not sent to the model]"
        if content.get("type") == "component":
            return f"[a {content.get('component', 'component')} was shown here; it is not sent to the model]"
        return ""
    return str(content)


def shown_line(text: str, speaker: str | None) -> str:
    """A user line as the chat shows it: "朋友A: …" when someone other than the user said it (the
    reply's drawing and the stored chat's both, so a redraw from the store keeps the speaker)."""
    return f"{speaker}: {text}" if speaker else text


def history_messages(history: list[dict[str, Any]]) -> list[BaseMessage]:
    """The chat's earlier turns as LangChain messages, whatever the shape of their content."""
    messages: list[BaseMessage] = []
    for item in history or []:
        role = item.get("role") if isinstance(item, dict) else None
        if role not in ("user", "assistant") or shown_only(item):
            continue
        text = content_text(item.get("content")).strip()
        if text:
            messages.append(HumanMessage(text) if role == "user" else AIMessage(text))
    return messages
