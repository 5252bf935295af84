"""`memlane relations USER`: the links between the people, places and things of a user's life
(issue 53), current ones, those held at --as-of, or every one with --past."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memlane.cli_support import run_async, with_store

if TYPE_CHECKING:  # `memlane --help` and `--version` load neither the settings nor pydantic
    from memlane.config import Settings


def _day(when: float) -> str:
    return datetime.fromtimestamp(when).strftime("%Y-%m-%d")


def cmd_relations(args: argparse.Namespace, settings: Settings) -> int:
    """List the user's links: subject, predicate, object, since when (and until when, once ended)."""

    from memlane.store.relations import RelationStore

    async def relations(store: Any) -> int:
        if not isinstance(store, RelationStore):
            print("memlane relations: this store keeps no relations", file=sys.stderr)
            return 1
        names = {entity.id: entity.name for entity in await store.list_entities(args.user)}
        links = await store.list_relations(args.user, as_of=args.as_of, include_past=args.past)
        if not links:
            print("no relations")
            return 0
        print("subject\tpredicate\tobject\tsince\tuntil")
        for link in links:
            until = _day(link.valid_until) if link.valid_until is not None else ""
            subject, target = names.get(link.subject, link.subject), names.get(link.object, link.object)
            print(f"{subject}\t{link.predicate}\t{target}\t{_day(link.valid_from)}\t{until}")
        return 0

    return int(run_async(lambda: with_store(settings, relations)))


def add_relations_parser(commands: Any) -> Any:
    """The `relations` subcommand's parser (its handler: `cmd_relations`)."""
    relations = commands.add_parser("relations", help="the links between the people, places and things of a user")
    relations.add_argument("user")
    relations.add_argument("--past", action="store_true", help="every link, ended ones too")
    relations.add_argument("--as-of", type=float, default=None, help="the links that held then (epoch seconds)")
    relations.set_defaults(handler=cmd_relations)
    return relations
