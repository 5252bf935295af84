"""Memory scopes below the user: an agent's (or a persona's) own memory of a user, and a shared
scope that no one user owns.

A scope is a store user of its own, so everything keyed by the store user (history, sessions,
profile, events, notes, items, memory runs and their cursor) is isolated per scope with no
second code path. Two kinds:

- **an agent's scope** of a user: `scoped_user_id(user_id, agent_id)`. Its keys carry the user's
  hash tag (`memlane:u:{<user digest>}.<scope digest>:…`), so on a Redis Cluster every scope of a
  user sits in the user's slot, beside the user's own keys; deleting the user removes them all,
  and exporting the user exports each of them (`KeyLayout.scopes` lists the agents).
- **a shared scope**: `SHARED_USER_ID` (the doors qualify it by tenant: `memlane.tenants`), a user
  nobody can sign in as. Recall reads it beside the user's own memories when asked to
  (`MemoryAgentContext.shared_user_id`). It has a hash tag of its own, so on a cluster that read
  goes to a second shard: an explicit cross-slot read, one search more per recall.
"""

from __future__ import annotations

from memlane.store.errors import InvalidInput

SCOPE_MARK = "\x1f"  # between a user id and its scope; the doors refuse control characters in ids
AGENT_SCOPE = "agent:"
SHARED_USER_ID = "\x1eshared"  # a user id no door accepts (a control character): the shared scope


def scoped_user_id(user_id: str, agent_id: str | None = None) -> str:
    """The store user of `agent_id`'s memory of `user_id` (`user_id` itself when no agent).
    An id that is already an agent's scope is refused: scopes do not nest."""
    if not agent_id:
        return user_id
    if SCOPE_MARK in user_id:
        raise InvalidInput(
            "the user id already names a scope (it holds \\x1f); pass the plain user id and the agent id"
        )
    if "\x00" in agent_id or SCOPE_MARK in agent_id:
        raise InvalidInput("an agent id may not hold a NUL byte or \\x1f")
    return f"{user_id}{SCOPE_MARK}{AGENT_SCOPE}{agent_id}"


def split_user_id(store_user: str) -> tuple[str, str | None]:
    """(the user id, the agent id or None) of a store user made by `scoped_user_id`."""
    user_id, mark, scope = store_user.partition(SCOPE_MARK)
    if not mark:
        return store_user, None
    return user_id, scope.removeprefix(AGENT_SCOPE)


def agent_of(store_user: str) -> str | None:
    """The agent whose scope `store_user` is (None: the user's own memory, or a shared scope)."""
    return split_user_id(store_user)[1]
