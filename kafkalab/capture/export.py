"""Streaming a capture out: frames in batches, and the frames table written to Parquet without holding the
capture in memory.

Owns: cutting the frame stream of :func:`~.capture.iter_frames` into batches that are *complete*: a request
is held back (with everything after it, to keep frame order) until its response has been seen, so its
``response_frame`` and ``latency_ms`` are filled in, unless the batch grows too large (a request that is
never answered, or a capture with thousands in flight) or the capture ends. Memory is bounded by the batch
limits (frames and raw bytes), not by the capture's size.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Iterator

from kafkalab.dissect.frame import Frame

from .capture import frame_stream

BATCH_FRAMES = 20_000
BATCH_BYTES = 16 << 20
HOLD_LIMIT = 4                      # a held batch may grow to this many times the limits


def iter_batches(source, ports: Iterable[int] | None = None, *, where: Callable[[Frame], bool] | None = None,
                 limit: int | None = None, batch_frames: int = BATCH_FRAMES, batch_bytes: int = BATCH_BYTES,
                 diagnostics: list[str] | None = None, progress=None) -> Iterator[list[Frame]]:
    """Lists of frames in frame order; ``where`` keeps only matching frames (tested once a batch is complete,
    so pairing columns are filled in); at most ``limit`` frames in all."""
    stream = frame_stream(source, ports, diagnostics, progress)
    pending: list[Frame] = []
    size = 0
    emitted = 0
    for frame in stream:
        pending.append(frame)
        size += len(frame.raw)
        if len(pending) < batch_frames and size < batch_bytes:
            continue
        ready = _complete_prefix(pending, stream.awaiting_response)
        if not ready and len(pending) < batch_frames * HOLD_LIMIT and size < batch_bytes * HOLD_LIMIT:
            continue
        ready = ready or len(pending)
        batch, pending = pending[:ready], pending[ready:]
        size = sum(len(f.raw) for f in pending)
        batch = [f for f in batch if where(f)] if where is not None else batch
        if limit is not None:
            batch = batch[:limit - emitted]
        if batch:
            emitted += len(batch)
            yield batch
        if limit is not None and emitted >= limit:
            return
    batch = [f for f in pending if where(f)] if where is not None else pending
    if limit is not None:
        batch = batch[:limit - emitted]
    if batch:
        yield batch


def _complete_prefix(frames: list[Frame], awaiting_response: Callable[[Frame], bool]) -> int:
    """How many leading frames can be written now: up to the first request still waiting for its response."""
    for index, frame in enumerate(frames):
        if frame.kind == "request" and frame.response_frame is None and awaiting_response(frame):
            return index
    return len(frames)


def write_frames(source, out, *, ports: Iterable[int] | None = None, where: Callable[[Frame], bool] | None = None,
                 limit: int | None = None, diagnostics: list[str] | None = None, progress=None,
                 compression: str = "zstd") -> int:
    """Stream the frames table of ``source`` into the Parquet file ``out`` (a path or a binary file object);
    returns the number of rows written. Memory stays bounded whatever the capture's size."""
    import pyarrow.parquet as pq

    from kafkalab.dissect.frames_table import frames_arrow, frames_schema

    count = 0
    target = os.fspath(out) if isinstance(out, (str, os.PathLike)) else out
    with pq.ParquetWriter(target, frames_schema(), compression=compression) as writer:
        for batch in iter_batches(source, ports, where=where, limit=limit, diagnostics=diagnostics,
                                  progress=progress):
            writer.write_table(frames_arrow(batch))
            count += len(batch)
    return count
