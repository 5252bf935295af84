"""Tenants and the user ids the doors accept: a (tenant, user) pair is one store user.

`memlane serve` scopes each API key to a tenant, and the CLI's `--tenant` reaches the same data,
so the mapping lives here, below both; the store and recall know nothing of tenants.
"""

from __future__ import annotations

import re

from memlane.store.scopes import SHARED_USER_ID

TENANT_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
USER_ID_MAX_CHARS = 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_user_id(user_id: str) -> str:
    """`user_id` when the API accepts it: 1 to 512 characters, no "/" (it could not be a path
    segment), no control characters, not "." or "..". Raises ValueError saying which rule failed."""
    if not user_id:
        raise ValueError("the user id is empty")
    if len(user_id) > USER_ID_MAX_CHARS:
        raise ValueError(f"the user id is longer than {USER_ID_MAX_CHARS} characters")
    if "/" in user_id or _CONTROL.search(user_id) or user_id in (".", ".."):
        raise ValueError('a user id may not contain "/" or control characters, nor be "." or ".."')
    return user_id


def store_user_id(tenant: str, user_id: str) -> str:
    """The one store user id of (tenant, user): "tenant/user". Unambiguous because a tenant id
    never contains "/" (`TENANT_PATTERN`)."""
    if not TENANT_PATTERN.fullmatch(tenant):
        raise ValueError(f"tenant {tenant!r} is not a tenant id (a-z, 0-9, '_' and '-', at most 63)")
    return f"{tenant}/{check_user_id(user_id)}"


def shared_store_user_id(tenant: str) -> str:
    """The store user of the tenant's shared scope (`store/scopes.py`): readable by every user of
    the tenant, named by no user id a door accepts (it holds a control character)."""
    if not TENANT_PATTERN.fullmatch(tenant):
        raise ValueError(f"tenant {tenant!r} is not a tenant id (a-z, 0-9, '_' and '-', at most 63)")
    return f"{tenant}/{SHARED_USER_ID}"
