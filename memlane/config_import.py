"""The settings of importing past conversations (`Settings.imports`): how large an import the
service takes, which ones it answers within the request, and the batches a larger one is stored
and embedded in. `memlane.config` gathers them with the rest; import them from there."""

from __future__ import annotations

from pydantic import Field

from memlane.config_store import Component


class ImportSettings(Component):
    """Imports (`POST /v1/users/{user_id}/messages`, memlane/import_jobs.py)."""

    flat_prefix = "import_"

    max_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description=(
            "Largest body of an import (`POST /v1/users/{user_id}/messages`; about 150,000 short messages at 16 MiB); "
            "a larger one is answered 413, to be sent in parts (a message already stored is skipped)"
        ),
    )
    sync_messages: int = Field(
        default=200,
        ge=0,
        description=(
            "An import of at most this many messages is stored and made searchable within the request (201); a "
            "larger one is answered at once (202) with a job that stores and embeds it in the background"
        ),
    )
    batch_messages: int = Field(
        default=100,
        ge=1,
        le=5000,
        description=(
            "Messages an import stores and embeds at a time (`memlane import`, which streams a JSONL file, and the "
            "service's import jobs, whose embedding waits behind what callers wait on and takes its turn among tenants)"
        ),
    )
