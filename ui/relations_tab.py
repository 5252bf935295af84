"""The memory panel's People tab (issue 53): the user's people, places and things and the links
between them as a picture (ui/relations_picture.py), current links solid, ended ones dashed, and a
box to forget an entity (by any of its names) or one link (`relation:<id>`, listed under it). The
handlers are module-level and take the `ChatApp` first, like ui/handlers.py's; ui/app.py lays out
the tab and binds them."""

from __future__ import annotations

import base64
from html import escape

from memlane.store.errors import InvalidInput
from memlane.store.ids import now
from memlane.store.relations import USER_ENTITY_NAME, RelationStore
from memlane.ui.handlers import DEFAULT_USER, ChatApp
from memlane.ui.relations_picture import relation_svg

EMPTY = "no people, places or things yet · 还没有人物和地点"
MAX_ALT_LINKS = 30  # the alt text names this many links, then counts the rest


def _user(user_id: str | None) -> str:
    return (user_id or "").strip() or DEFAULT_USER


async def _relations(app: ChatApp) -> RelationStore | None:
    await app.service.ensure_started()
    store = app.service.started_store
    return store if isinstance(store, RelationStore) else None


async def relations_view(app: ChatApp, user_id: str) -> str:
    """The tab's picture (an <img> of the SVG: it runs no script) and a line counting what it shows."""
    store = await _relations(app)
    if store is None:
        return "<p>this memory store keeps no relations</p>"
    user_id = _user(user_id)
    entities = await store.list_entities(user_id)
    relations = await store.list_relations(user_id, include_past=True) if entities else []
    if not relations:
        return f"<p>{escape(EMPTY)}</p>"
    when = now()
    names = {entity.id: ("me" if entity.name == USER_ENTITY_NAME else entity.name) for entity in entities}
    described = [
        f"{names.get(link.subject, '?')} → {link.predicate.replace('_', ' ')} → {names.get(link.object, '?')}"
        + ("" if link.holds_at(when) else " (ended)")
        for link in relations[:MAX_ALT_LINKS]
    ]
    more = len(relations) - len(described)
    alt = "links: " + "; ".join(described) + (f"; and {more} more" if more > 0 else "")
    svg = relation_svg(entities, relations, as_of=when)
    source = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
    ended = sum(not link.holds_at(when) for link in relations)
    line = f"{len(entities)} people, places and things; {len(relations) - ended} current links, {ended} ended"
    listed = "".join(
        f"<li><code>relation:{escape(link.id)}</code> {escape(text)}</li>"
        for link, text in zip(relations, described, strict=False)
    )
    return (
        f'<img src="{source}" alt="{escape(alt)}" style="max-width: 100%; height: auto;" '
        f'data-links="{len(relations)}" data-ended="{ended}"><p>{escape(line)}</p>'
        f"<details><summary>links and their ids</summary><ul>{listed}</ul></details>"
    )


async def forget_from_picture(app: ChatApp, user_id: str, what: str) -> tuple[str, str]:
    """Forget what the box names: `relation:<id>` one link; else the entity of that name or id, with
    every link touching it. The picture again, and what was done."""
    user_id, what = _user(user_id), (what or "").strip()
    store = await _relations(app)
    if store is None:
        return await relations_view(app, user_id), "this memory store keeps no relations"
    if not what:
        return await relations_view(app, user_id), "type a name (or relation:<id>) to forget first"
    try:
        if what.startswith("relation:"):
            forgotten = await store.forget_relation(user_id, what.removeprefix("relation:"))
            said = f"forgot {what}" if forgotten else f"no link {what!r}"
        else:
            removed = await store.forget_entity(user_id, what)
            said = f"forgot {what} and {removed - 1} link(s)" if removed else f"nothing named {what!r} is known"
    except InvalidInput as error:  # a name no entity can have: said, nothing forgotten
        said = str(error)
    return await relations_view(app, user_id), said


__all__ = ["EMPTY", "forget_from_picture", "relations_view"]
