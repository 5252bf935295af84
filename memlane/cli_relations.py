"""`memlane relations USER`: the links between the people, places and things of a user's life
(issue 53), current ones, those held at --as-of, or every one with --past; --forget-entity X
(an id or any name: the entity and every link touching it) and --forget-relation ID forget."""

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
        if args.forget_entity is not None or args.forget_relation is not None:
            return await forget(store)
        names = {entity.id: entity.name for entity in await store.list_entities(args.user)}
        links = await store.list_relations(args.user, as_of=args.as_of, include_past=args.past)
        if not links:
            print("no relations")
            return 0
        print("subject\tpredicate\tobject\tsince\tuntil" + ("\tid" if args.ids else ""))
        for link in links:
            until = _day(link.valid_until) if link.valid_until is not None else ""
            subject, target = names.get(link.subject, link.subject), names.get(link.object, link.object)
            shown_id = f"\t{link.id}" if args.ids else ""
            print(f"{subject}\t{link.predicate}\t{target}\t{_day(link.valid_from)}\t{until}{shown_id}")
        return 0

    async def forget(store: RelationStore) -> int:
        """Forget what --forget-entity / --forget-relation name; 1 when the user has none such."""
        if args.forget_entity is not None:
            removed = await store.forget_entity(args.user, args.forget_entity)
            if not removed:
                print(f"memlane relations: no entity {args.forget_entity!r} (--past lists the links)", file=sys.stderr)
                return 1
            print(f"forgot {args.forget_entity} and {removed - 1} relation(s)")
        if args.forget_relation is not None:
            relation = args.forget_relation.removeprefix("relation:")
            if not await store.forget_relation(args.user, relation):
                print(f"memlane relations: no relation {args.forget_relation!r} (--ids shows them)", file=sys.stderr)
                return 1
            print(f"forgot relation {relation}")
        return 0

    return int(run_async(lambda: with_store(settings, relations)))


def add_relations_parser(commands: Any) -> Any:
    """The `relations` subcommand's parser (its handler: `cmd_relations`)."""
    relations = commands.add_parser("relations", help="the links between the people, places and things of a user")
    relations.add_argument("user")
    relations.add_argument("--past", action="store_true", help="every link, ended ones too")
    relations.add_argument("--as-of", type=float, default=None, help="the links that held then (epoch seconds)")
    relations.add_argument(
        "--forget-entity", metavar="ENTITY", help="forget an entity (its id or any name) and every link touching it"
    )
    relations.add_argument("--forget-relation", metavar="ID", help="forget one link, by the id --ids shows")
    relations.add_argument("--ids", action="store_true", help="show each link's id (for --forget-relation)")
    relations.set_defaults(handler=cmd_relations)
    return relations
