"""The user's people, places and things drawn as a picture (issue 53): an SVG made here, on the
server, with no dependency and nothing fetched. The user in the middle, the entities one link away
on a ring around, those two links away on the next ring (each near the one that links it), the
rest outside; current links solid with an arrow, ended links dashed and grey with the day they
ended. Every name is escaped, and the app shows the SVG as an <img>, which runs no script.
Pure: records in, text out."""

from __future__ import annotations

import math
from collections import deque
from datetime import datetime
from html import escape

from memlane.relation_labels import predicate_label
from memlane.store.relations import USER_ENTITY_NAME, Entity, Relation

MAX_NODES = 40  # a picture with more is unreadable: the best-linked are drawn, the rest counted
MAX_LABEL_CHARS = 18
RING = 150  # px between rings
NODE_RADIUS = 24
MARGIN = 70
FONT = "'Noto Sans CJK SC','WenQuanYi Zen Hei','Microsoft YaHei','PingFang SC',sans-serif"
COLOURS = {  # by entity type: fill, stroke
    "user": ("#3b5bdb", "#2b3f99"),
    "person": ("#74c0fc", "#1c7ed6"),
    "place": ("#8ce99a", "#2f9e44"),
    "organisation": ("#ffd43b", "#e67700"),
    "pet": ("#ffa8a8", "#e03131"),
}
OTHER_COLOURS = ("#dee2e6", "#868e96")
USER_LABEL = "me · 我"
CURRENT_LABEL = "current · 现在"
ENDED_LABEL = "ended · 已结束"


def _short(text: str) -> str:
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def _day(when: float) -> str:
    return datetime.fromtimestamp(when).strftime("%Y-%m-%d")


def _kept_nodes(entities: dict[str, Entity], relations: list[Relation], user: str | None) -> list[str]:
    """The entities drawn: those on a link, best-linked first (the user always), at most MAX_NODES."""
    degree: dict[str, int] = {}
    for relation in relations:
        for end in (relation.subject, relation.object):
            if end in entities:
                degree[end] = degree.get(end, 0) + 1
    ranked = sorted(degree, key=lambda entity_id: (entity_id != user, -degree[entity_id], entities[entity_id].name))
    return ranked[:MAX_NODES]


def _rings(nodes: list[str], relations: list[Relation], user: str | None) -> dict[str, int]:
    """Each node's ring: its links from the user (0 the user), unreached ones one ring further out."""
    neighbours: dict[str, list[str]] = {node: [] for node in nodes}
    for relation in relations:
        if relation.subject in neighbours and relation.object in neighbours:
            neighbours[relation.subject].append(relation.object)
            neighbours[relation.object].append(relation.subject)
    ring: dict[str, int] = {}
    if user in neighbours:
        ring[user] = 0
        queue = deque([user])
        while queue:
            node = queue.popleft()
            for other in neighbours[node]:
                if other not in ring:
                    ring[other] = ring[node] + 1
                    queue.append(other)
    outer = max(ring.values(), default=0) + 1
    return {node: ring.get(node, outer) for node in nodes}


def _spread(targets: list[float], gap: float) -> list[float]:
    """Angles near `targets` (sorted), each at least `gap` after the one before, their mean shift nought."""
    placed: list[float] = []
    for target in targets:
        placed.append(max(target, placed[-1] + gap) if placed else target)
    shift = sum(target - angle for target, angle in zip(targets, placed)) / max(len(placed), 1)
    return [angle + shift for angle in placed]


def _positions(nodes: list[str], relations: list[Relation], ring: dict[str, int]) -> dict[str, tuple[float, float]]:
    """Where each node sits, around (0, 0): on its ring, near the node of the ring inside that links it
    (the first ring evenly), so that links cross as little as a ring layout allows."""
    linked_to: dict[str, list[str]] = {}
    for relation in relations:
        linked_to.setdefault(relation.object, []).append(relation.subject)
        linked_to.setdefault(relation.subject, []).append(relation.object)
    angle: dict[str, float] = {}
    positions: dict[str, tuple[float, float]] = {}
    for level in sorted(set(ring.values())):
        members = [node for node in nodes if ring[node] == level]
        if level == 0:
            angle.update((node, 0.0) for node in members)
            positions.update((node, (0.0, 0.0)) for node in members)
            continue
        inner = {
            node: [angle[other] for other in linked_to.get(node, []) if other in angle and ring[other] < level]
            for node in members
        }
        if level == 1 or not any(inner.values()):  # evenly, from the top
            targets = [-math.pi / 2 + math.tau * index / len(members) for index in range(len(members))]
        else:
            members.sort(key=lambda node: min(inner[node], default=math.tau))
            targets = [min(inner[node], default=math.tau) for node in members]
        gap = min(math.tau / len(members), 0.9 / level)  # about 130 px apart on any ring
        for node, theta in zip(members, _spread(targets, gap) if level > 1 else targets):
            angle[node] = theta
            positions[node] = (level * RING * math.cos(theta), level * RING * math.sin(theta))
    return positions


def relation_svg(entities: list[Entity], relations: list[Relation], *, as_of: float) -> str:
    """The picture of `relations` (current and ended ones) between `entities`, as SVG text."""
    by_id = {entity.id: entity for entity in entities}
    user = next((entity.id for entity in entities if entity.name == USER_ENTITY_NAME), None)
    nodes = _kept_nodes(by_id, relations, user)
    drawn = set(nodes)
    shown = [relation for relation in relations if relation.subject in drawn and relation.object in drawn]
    ring = _rings(nodes, shown, user)
    positions = _positions(nodes, shown, ring)
    xs = [x for x, _ in positions.values()] or [0.0]
    ys = [y for _, y in positions.values()] or [0.0]
    left, top = min(xs) - NODE_RADIUS - MARGIN, min(ys) - NODE_RADIUS - MARGIN / 2
    width = max(max(xs) - min(xs) + 2 * (NODE_RADIUS + MARGIN), 340.0)  # the legend's width at least
    height = max(ys) - min(ys) + 2 * NODE_RADIUS + 1.5 * MARGIN + 30  # the names under the lowest, the legend
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="{left:.0f} {top:.0f} {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" font-family="{FONT}" font-size="13">',
        "<defs>"
        '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#495057"/></marker>'
        '<marker id="arrow-ended" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#adb5bd"/></marker>'
        "</defs>",
        f'<rect x="{left:.0f}" y="{top:.0f}" width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
    ]
    pair_count: dict[frozenset[str], int] = {}
    # ended links first, so the current ones are drawn over them
    for relation in sorted(shown, key=lambda link: (link.holds_at(as_of), link.valid_from, link.id)):
        parts.append(_edge(relation, positions, as_of, pair_count))
    for node in nodes:
        parts.append(_node(by_id[node], positions[node], node == user))
    linked_ids = {end for relation in relations for end in (relation.subject, relation.object) if end in by_id}
    parts.append(_legend(left + 12, top + height - 14, len(linked_ids) - len(nodes)))
    parts.append("</svg>")
    return "".join(parts)


def _edge(
    relation: Relation,
    positions: dict[str, tuple[float, float]],
    as_of: float,
    pair_count: dict[frozenset[str], int],
) -> str:
    (x1, y1), (x2, y2) = positions[relation.subject], positions[relation.object]
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    start = (x1 + ux * NODE_RADIUS, y1 + uy * NODE_RADIUS)
    end = (x2 - ux * (NODE_RADIUS + 2), y2 - uy * (NODE_RADIUS + 2))
    current = relation.holds_at(as_of)
    pair = frozenset((relation.subject, relation.object))
    nth = pair_count.get(pair, 0)
    pair_count[pair] = nth + 1
    label = predicate_label(relation.predicate)
    if not current and relation.valid_until is not None:
        label += f" (until {_day(relation.valid_until)})"
    # labels of several links between one pair stack along the perpendicular
    mid_x = (start[0] + end[0]) / 2 - uy * 14 * nth
    mid_y = (start[1] + end[1]) / 2 + ux * 14 * nth
    style = (
        'stroke="#495057" stroke-width="2" marker-end="url(#arrow)"'
        if current
        else 'stroke="#adb5bd" stroke-width="1.6" stroke-dasharray="7 5" marker-end="url(#arrow-ended)"'
    )
    state = "current" if current else "ended"
    return (
        f'<g class="link {state}" data-state="{state}"><title>{escape(label)}</title>'
        f'<line x1="{start[0]:.1f}" y1="{start[1]:.1f}" x2="{end[0]:.1f}" y2="{end[1]:.1f}" {style}/>'
        f'<text x="{mid_x:.1f}" y="{mid_y:.1f}" text-anchor="middle" dominant-baseline="middle" '
        f'fill="{"#343a40" if current else "#868e96"}" stroke="#ffffff" stroke-width="4" paint-order="stroke" '
        f'font-size="12">{escape(label)}</text></g>'
    )


def _node(entity: Entity, position: tuple[float, float], is_user: bool) -> str:
    x, y = position
    fill, stroke = COLOURS["user"] if is_user else COLOURS.get(entity.type, OTHER_COLOURS)
    name = USER_LABEL if is_user else entity.name
    aliases = "" if is_user or not entity.aliases else " (" + ", ".join(entity.aliases) + ")"
    return (
        f'<g class="entity" data-type="{escape(entity.type)}"><title>{escape(name + aliases)}</title>'
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{NODE_RADIUS}" fill="{fill}" stroke="{stroke}" stroke-width="2"/>'
        f'<text x="{x:.1f}" y="{y + NODE_RADIUS + 16:.1f}" text-anchor="middle" fill="#212529" stroke="#ffffff" '
        f'stroke-width="4" paint-order="stroke" font-weight="600">{escape(_short(name))}</text></g>'
    )


def _legend(x: float, y: float, left_out: int) -> str:
    more = f"; {left_out} more not drawn" if left_out > 0 else ""
    return (
        f'<g class="legend" font-size="12" fill="#495057">'
        f'<line x1="{x:.0f}" y1="{y:.0f}" x2="{x + 30:.0f}" y2="{y:.0f}" stroke="#495057" stroke-width="2"/>'
        f'<text x="{x + 36:.0f}" y="{y + 4:.0f}">{escape(CURRENT_LABEL)}</text>'
        f'<line x1="{x + 140:.0f}" y1="{y:.0f}" x2="{x + 170:.0f}" y2="{y:.0f}" stroke="#adb5bd" stroke-width="1.6" '
        f'stroke-dasharray="7 5"/><text x="{x + 176:.0f}" y="{y + 4:.0f}">{escape(ENDED_LABEL + more)}</text></g>'
    )


__all__ = ["relation_svg"]
