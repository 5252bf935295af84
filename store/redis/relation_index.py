"""The per-entity link index of a user's relations (issue 53): what lets recall read only the links
of the entities a message names, not every link and entity the user has.

One hash under the user's prefix (so in the user's hash slot, isolated and deleted with the user as
the relation hashes are), derived from the `relations` hash and rewritten in the same transaction
as every write and forget (`store/redis/relations.py`):

- `<entity id>`: JSON list of the ids of every relation whose subject or object the entity is;
- `<entity id>>`: JSON list of the predicates of its outgoing relations (the user's roles);
- `<entity id>><predicate>`: JSON list of the ids of its outgoing relations with that predicate;
- `~built`: present once the index covers the relations (a store written before the index has
  none; the first read builds it).

Entity ids are hexadecimal and predicates are words, so no field of one kind reads as another.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from redis.commands.core import AsyncScript

from memlane.store.relations import Neighbourhood, Relation
from memlane.store.schema import KeyLayout

BUILT_FIELD = "~built"
_ROLES = ">"
READ_AHEAD_MAX_LINKS = 64  # an entity with more outgoing links is not read ahead (the walk asks if it needs it)
READ_MAX_LINKS = 2_000  # nor is anything more once this many links were read
_UNBUILT = "~unbuilt"

# Reads the links around what a message names in one round trip. KEYS: entity_names,
# entity_links, relations, entities. ARGV: ahead, the per-entity and total caps, the count of
# names, the names (normalized; "user" among them gives the user), the count of roles, the roles
# (predicates of the user's links to read), then entity ids (every link touching them).
# Reads: the entities the names name and every link touching them; the user's links with the
# given roles; then `ahead` levels out, the outgoing links of the entities those reach (not the
# user's, not an entity's with more than the per-entity cap, nothing once the total is read);
# the name of every entity seen. Returns {"~unbuilt"} when the user has relations and no index,
# otherwise {name/id pairs found, the user's id or "", every predicate of the user's links, the
# entity of each read field, the relation count of each, entities read ahead each followed by its
# relation count, every relation JSON in that order, id/name pairs}.
NEIGHBOURHOOD_LUA = """
local names_key, links_key, relations_key, entities_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if not redis.call('HGET', links_key, '~built') and redis.call('EXISTS', relations_key) == 1 then
  return {'~unbuilt'}
end
local ahead, per_entity, total = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local raws, counts, read_for, ahead_read, names, named, done, count = {}, {}, {}, {}, {}, {}, {}, 0
local found, user, user_roles = {}, '', {}
local function listed(field)
  local value = redis.call('HGET', links_key, field)
  if not value then return {} end
  local ok, items = pcall(cjson.decode, value)
  if ok and type(items) == 'table' then return items end
  return {}
end
local function name(entity)
  if named[entity] then return end
  named[entity] = true
  local raw = redis.call('HGET', entities_key, entity)
  if raw then
    local ok, record = pcall(cjson.decode, raw)
    if ok and type(record) == 'table' and type(record['name']) == 'string' then
      names[#names + 1] = entity
      names[#names + 1] = record['name']
    end
  end
end
local function read(ids, reached)
  local taken = 0
  for _, id in ipairs(ids) do
    local raw = redis.call('HGET', relations_key, id)
    if raw then
      raws[#raws + 1] = raw
      taken = taken + 1
      local ok, relation = pcall(cjson.decode, raw)
      if ok and type(relation) == 'table' then
        name(relation['subject'])
        name(relation['object'])
        reached[#reached + 1] = relation['subject']
        reached[#reached + 1] = relation['object']
      end
    end
  end
  count = count + taken
  return taken
end
local frontier = {}
local function read_field(entity, field)
  done[entity] = true
  name(entity)
  read_for[#read_for + 1] = entity
  counts[#counts + 1] = read(listed(field), frontier)
end
local name_count = tonumber(ARGV[4])
local starts = {}
if name_count > 0 then
  local ids = redis.call('HMGET', names_key, unpack(ARGV, 5, 4 + name_count))
  for index = 1, name_count do
    local id = ids[index]
    if id then
      found[#found + 1] = ARGV[4 + index]
      found[#found + 1] = id
      if ARGV[4 + index] == 'user' then user = id else starts[#starts + 1] = id end
    end
  end
end
local role_at = 5 + name_count
local role_count = tonumber(ARGV[role_at])
if user ~= '' then
  user_roles = listed(user .. '>')
  local has = {}
  for _, role in ipairs(user_roles) do has[role] = true end
  for index = role_at + 1, role_at + role_count do
    if has[ARGV[index]] then read_field(user, user .. '>' .. ARGV[index]) end
  end
end
for _, entity in ipairs(starts) do
  if entity ~= user and not done[entity] then read_field(entity, entity) end
end
for index = role_at + role_count + 1, #ARGV do
  if not done[ARGV[index]] then read_field(ARGV[index], ARGV[index]) end
end
for _ = 1, ahead do
  local reached = {}
  for _, entity in ipairs(frontier) do
    if not done[entity] and entity ~= user and count < total then
      done[entity] = true
      local ids = {}
      for _, predicate in ipairs(listed(entity .. '>')) do
        for _, id in ipairs(listed(entity .. '>' .. predicate)) do ids[#ids + 1] = id end
      end
      if #ids <= per_entity then
        ahead_read[#ahead_read + 1] = entity
        ahead_read[#ahead_read + 1] = read(ids, reached)
      end
    end
  end
  frontier = reached
end
return {found, user, user_roles, read_for, counts, ahead_read, raws, names}
"""


def entity_links_key(layout: KeyLayout, user_id: str) -> str:
    """Hash: the per-entity link index (this module's docstring), in KeyLayout (store/schema.py)."""
    return layout.entity_links(user_id)


def links_field(entity: str) -> str:
    """The field of every relation touching `entity`."""
    return entity


def roles_field(entity: str) -> str:
    """The field of the predicates of `entity`'s outgoing relations."""
    return entity + _ROLES


def role_field(entity: str, predicate: str) -> str:
    """The field of `entity`'s outgoing relations with `predicate`."""
    return entity + _ROLES + predicate


def index_fields(relations: Iterable[Relation]) -> dict[str, str]:
    """Every field of the index over `relations`, with its value (pure; lists sorted, so equal
    relations give equal values and a write rewrites only the fields that changed)."""
    touching: dict[str, set[str]] = {}
    outgoing: dict[str, dict[str, set[str]]] = {}
    for relation in relations:
        touching.setdefault(relation.subject, set()).add(relation.id)
        touching.setdefault(relation.object, set()).add(relation.id)
        outgoing.setdefault(relation.subject, {}).setdefault(relation.predicate, set()).add(relation.id)
    fields = {links_field(entity): json.dumps(sorted(ids)) for entity, ids in touching.items()}
    for entity, roles in outgoing.items():
        fields[roles_field(entity)] = json.dumps(sorted(roles), ensure_ascii=False)
        for predicate, ids in roles.items():
            fields[role_field(entity, predicate)] = json.dumps(sorted(ids))
    fields[BUILT_FIELD] = "1"
    return fields


def index_changes(stored: Mapping[str, str], wanted: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(fields to set, fields to delete) that turn the `stored` index into `wanted`."""
    changed = {field: value for field, value in wanted.items() if stored.get(field) != value}
    return changed, [field for field in stored if field not in wanted]


class IndexUnbuilt(Exception):
    """The user's relations were written before the link index: a write builds it."""


def _text(value: Any) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


async def read_neighbourhood(
    script: AsyncScript,
    keys: tuple[str, str, str, str],
    *,
    names: Collection[str],
    roles: Collection[str],
    entities: Collection[str],
    ahead: int,
) -> Neighbourhood:
    """What `NEIGHBOURHOOD_LUA` reads around `names`, the user's `roles` and `entities`, in one
    script call; only the relations read are parsed. `IndexUnbuilt` when there is no index yet."""
    names, roles = list(names), list(roles)
    answer = await script(
        keys=list(keys),
        args=[ahead, READ_AHEAD_MAX_LINKS, READ_MAX_LINKS, len(names), *names, len(roles), *roles, *entities],
    )
    if len(answer) == 1:
        raise IndexUnbuilt(_UNBUILT)
    found, user, user_roles, read_for, counts, ahead_read, raws, flat_names = answer
    read = Neighbourhood(
        named={_text(found[i]): _text(found[i + 1]) for i in range(0, len(found), 2)},
        user=_text(user) or None,
        user_roles=[_text(role) for role in user_roles],
        names={_text(flat_names[i]): _text(flat_names[i + 1]) for i in range(0, len(flat_names), 2)},
    )
    relations = [Relation.model_validate_json(raw) for raw in raws]
    position = 0
    for entity, taken in zip(map(_text, read_for), counts, strict=True):
        read.links.setdefault(entity, []).extend(relations[position : position + taken])
        position += taken
    for index in range(0, len(ahead_read), 2):
        entity, taken = _text(ahead_read[index]), int(ahead_read[index + 1])
        read.links[entity] = relations[position : position + taken]
        read.outgoing_only.add(entity)
        position += taken
    return read
