"""How the MCP tools answer a store's refusal: as the tool's error, its message saying what to do."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from mcp.server.mcpserver.exceptions import ToolError

from memlane import StoreError
from memlane.store.errors import InvalidInput


@contextlib.asynccontextmanager
async def store_errors() -> AsyncIterator[None]:
    """A store's refusal as the tool's error, its message saying what to do."""
    try:
        yield
    except StoreError as error:  # Redis away, embedder down: the message says what to do
        raise ToolError(str(error)) from error
    except InvalidInput as error:  # an id the store refuses, a bad expires_at: it names what to change
        raise ToolError(str(error)) from error
