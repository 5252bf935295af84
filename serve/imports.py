"""The imports of `memlane serve`, under /v1/users/{user_id}: past messages stored whole (`POST
/messages`, `memlane import`'s shapes) and the jobs that take the large ones (`GET
/imports/{job_id}`).

An import of at most MEMLANE_IMPORT_SYNC_MESSAGES messages is stored and made searchable within
the request (201). A larger one is read and checked (a bad message is 422 before anything is
stored), then answered at once (202) with a job that stores and embeds it in bounded batches in
the background, its embedding in its tenant's turn behind what callers wait on
(memlane/import_jobs.py). The body is capped at MEMLANE_IMPORT_MAX_BYTES (413 beyond,
serve/errors.py)."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from fastapi import APIRouter, Response

from memlane.importing import messages_of, store_messages
from memlane.serve.auth import valid_session_id
from memlane.serve.errors import ApiError
from memlane.serve.memories import Reader, Writer, run_requested
from memlane.serve.memory_schemas import ImportAccepted, ImportJobOut, MessagesIn, MessagesStored, PathId
from memlane.serve.service import Service
from memlane.store.errors import InvalidInput

router = APIRouter(prefix="/v1/users/{user_id}", tags=["memories"])


@router.post("/messages", status_code=201, response_model=None, responses={202: {"model": ImportAccepted}})
async def add_messages(
    body: MessagesIn, caller: Writer, service: Service, response: Response
) -> MessagesStored | ImportAccepted:
    """Store past messages of the user (a conversation held elsewhere), idempotent on message ids
    (a message without one gets it from what it is); they are remembered in windows, oldest first,
    by the next run, or once stored with `remember: "now"`. A large import is a job: 202."""
    document: dict[str, Any] = {"messages": body.messages or []}
    if body.sessions is not None:
        document = {"sessions": body.sessions}
    elif body.conversation is not None:
        document = {"conversation": body.conversation}
    read = functools.partial(
        messages_of,
        document,
        caller.store_user,
        session_id=valid_session_id(body.session_id),
        user_speaker=body.user_speaker,
    )
    large = "messages" not in document or len(body.messages or ()) > service.settings.imports.sync_messages
    try:
        messages = await asyncio.to_thread(read) if large else read()  # a large file is read off the event loop
    except InvalidInput as error:
        raise ApiError(422, str(error), "invalid_messages") from None
    if len(messages) > service.settings.imports.sync_messages:
        store_user = caller.store_user
        then = None
        if body.remember == "now":
            if service.scheduler is None:  # said now, not after the job: 409 naming what to configure
                run_requested(caller.user_id, None, None)
            then = functools.partial(service.remember_now, store_user)
        job = service.imports.start(store_user, messages, then=then)
        response.status_code = 202
        return ImportAccepted(
            user_id=caller.user_id,
            received=len(messages),
            job_id=job.id,
            job_url=f"/v1/users/{caller.user_id}/imports/{job.id}",
        )
    added = await store_messages(service.require_store(), messages)
    queued = None
    if body.remember == "now":
        queued = run_requested(caller.user_id, None, await service.remember_now(caller.store_user)).queued
    return MessagesStored(user_id=caller.user_id, received=len(messages), stored=added, queued=queued)


@router.get("/imports/{job_id}")
async def import_job(job_id: PathId, caller: Reader, service: Service) -> ImportJobOut:
    """How far an import job got: `state` running, done or failed; `stored`, `embedded`, `failed`
    (the first 20 with their reason). Kept by the process that took the import (the last 1,000)."""
    job = service.imports.get(caller.store_user, job_id)
    if job is None:
        raise ApiError(
            404,
            f"no import job {job_id!r} of this user here (jobs are kept by the process that took them, the last 1,000)",
            "not_found",
        )
    return ImportJobOut(user_id=caller.user_id, **job.view())
