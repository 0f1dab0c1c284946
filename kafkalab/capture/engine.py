"""The capture engine: packet index → streams → frames → exchanges → rows, over windows of a mapped file.

Owns: running the stages over a capture file a window at a time (:func:`kafkalab.pcap.index.index_windows`),
for both readers: ``read_capture`` keeps every row (:mod:`.bulk` builds its :class:`~.frame_store.FrameStore`)
and ``iter_frames`` / ``write_frames`` / ``kafkalab decode`` take the rows of each window as
:class:`~kafkalab.dissect.frame.Frame`s and let them go (:class:`FrameStream`), so their memory is bounded by
a window and the frames still open, whatever the capture's size. Both give the same frames in the same order.

Theory of operation, two passes over the windows:

1. :func:`plan` indexes each window and gives it to :meth:`.streams.Streams.classify` (connections numbered by
   first packet, counters, the regularity tests, a check that each regular direction cuts into frames). Only
   headers and size prefixes are read. At the end every connection is known regular or not, and a file the
   engine does not handle (records with TCP the index cannot read, a connection's addresses reused) is
   refused (:class:`Bail`) before any frame was given out: the general pipeline reads it instead.
2. :func:`window_events` indexes each window again (or takes pass 1's windows, when kept) and merges, in
   packet order, the regular connections' frames (:meth:`.streams.Streams.frames`, cut in bulk) with the
   irregular connections' packets, for :func:`.bulk._decode` (frames → exchanges → rows: regular frames
   decoded and paired there, irregular packets fed to the general path, an :class:`~.analyzer.Analyzer`,
   which numbers frames in the same sequence). A window's end is marked (:data:`WINDOW_END`) so a streaming
   reader can take its rows.

The general path is a stage of this engine, not a second engine: it is what a connection's packets go
through when its bytes are irregular (loss, reordering, mid-stream start, other ports), behind the same rows.
"""
from __future__ import annotations

import mmap
import os
from typing import Iterable, Iterator

from kafkalab.pcap import PacketDecoder
from kafkalab.pcap.files import LinkRecord

from .frame_store import PAIRING, R_INFERRED
from .segments import span_bytes
from .regularity import NotRegular
from .streams import Conn, Streams, _dotted

WINDOW_END = object()           # the events of one window end here
STREAM_WINDOW = 4 << 20         # file bytes per window when streaming (write_frames: under 200 MiB at peak)


class Bail(Exception):
    """The file is not one the engine handles: the general pipeline reads it."""


def mapped(source):
    """``source`` (a capture file path) mapped read-only, or None when it is not a file the engine reads
    (gzip, a file object, packets)."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    try:
        with open(source, "rb") as stream:
            head = stream.peek(24)[:24]
            if len(head) < 24 or head[:2] == b"\x1f\x8b":
                return None
            # Mapped, not read: the page cache is parsed in place, and the pages read are let go as the
            # windows pass (see pcap.index.release). A file cut shorter *during* the read would stop the
            # process, which is why only files already written are read this way (tcpdump and dumpcap only
            # ever append).
            return mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def plan(data, kafka_ports: frozenset, keep: bool, window: int | None = None,
         indexes: Iterable | None = None, answers: bool = True) -> tuple[list[Conn], list | None, int]:
    """Pass 1 over windows of ``window`` bytes (default: ``pcap.index.WINDOW``), or over ``indexes`` (packet
    indexes made elsewhere, whose payloads are in ``data``): (the connections with their verdicts, the packet
    index windows as (window, (the frames cut in it, its packets' connection numbers)) when ``keep``, else
    None, the number of TCP packets). Raises
    :class:`Bail` for a file the general pipeline must read. ``answers=False``: the verdicts leave out the
    rule on responses, which the caller's decoding applies (see :class:`.streams.Waiting`)."""
    from kafkalab.pcap.index import NotIndexable, index_windows     # numpy: only when a file is read so

    first = Streams(kafka_ports, answers=answers)
    kept: list | None = [] if keep else None
    packets = 0
    try:
        for index in index_windows(data, window) if indexes is None else indexes:
            _no_other_tcp(data, index)
            cut: list | None = [] if kept is not None else None
            conn_of = first.classify(index, data, cut)
            packets += len(index)
            if kept is not None:
                kept.append((index, (cut, conn_of)))
    except (NotIndexable, NotRegular):
        raise Bail from None
    conns = first.finish()
    if not packets:
        raise Bail
    for conn in conns:
        if not conn.irregular:
            conn.client_ip = _dotted(conn.ends[conn.client][0])
    return conns, kept, packets


def _no_other_tcp(data, index) -> None:
    """The records the index left aside must hold no TCP the general decoder would read (IPv6, VLAN tags,
    fragments...): such a file is read by the general pipeline."""
    if not len(index.others):
        return
    records, base = index.records, index.record_base
    decoder = PacketDecoder()
    for i in (index.others - base).tolist():
        start, stored = int(records.start[i]), int(records.stored[i])
        record = LinkRecord(base + i + 1, int(records.ts_ns[i]), int(records.linktype[i]),
                            data[start:start + stored], int(records.original[i]))
        if decoder.decode(record) is not None or decoder.pending_fragments():
            raise Bail


_PACKET_COLUMNS = ("src", "sport", "dst", "dport", "seq", "ack", "flags", "payload_start", "payload_length",
                   "number")


def window_events(data, conns: list[Conn], kafka_ports: frozenset, windows: list | None, columns: list,
                  packet_conn: list, window: int | None = None) -> Iterator:
    """Pass 2 (over ``windows``, pass 1's kept windows and frames, a list emptied as they are read, or else
    the file indexed and cut again):
    each window's events as one list, in packet order, ending with :data:`WINDOW_END` (a reader iterates
    them chained, with no generator step per event). An event is a regular connection's
    frame (see :meth:`.streams.Streams.frames`) or the window position (an int) of an irregular connection's
    packet. ``columns`` (the packet columns the general path needs, then ``ts_ns``) and
    ``packet_conn`` (each packet's :class:`Conn`, None in a window without irregular packets) are refilled in
    place with the window's values."""
    from kafkalab.pcap.index import index_windows

    second = Streams(kafka_ports, conns)
    any_irregular = any(c.irregular for c in conns)
    for index, cut in (((w, None) for w in index_windows(data, window)) if windows is None else _taken(windows)):
        conn_of, frames, irregular = second.frames(index, data, cut)
        # each packet's connection: only irregular packets are looked up (regular frames carry theirs)
        packet_conn[:] = [conns[c] for c in conn_of.tolist()] if irregular else [None] * len(conn_of)
        if any_irregular:
            for column, name in zip(columns, _PACKET_COLUMNS):
                column[:] = getattr(index, name).tolist()
        columns[10][:] = index.ts_ns.tolist()
        yield _merge(irregular, frames) + [WINDOW_END]         # a new list: pass 1's frames stay as they are


def _taken(items: list) -> Iterator:
    """The items of ``items``, in order, each let go by the list as it is given (a kept window's index and
    frames are freed once read, not at the end of the read)."""
    items.reverse()
    while items:
        yield items.pop()


def _merge(packets: list[int], frames: list[tuple]) -> list:
    """Events in packet order: a packet of an irregular connection as its position (an int), a regular
    connection's frame as itself, after the packets before the one that completed it (frames of one packet
    in stream order)."""
    if not packets:
        return frames
    if not frames:
        return packets
    out = []
    j, total = 0, len(frames)
    for i in packets:
        while j < total and frames[j][0] < i:
            out.append(frames[j])
            j += 1
        out.append(i)
    out.extend(frames[j:])
    return out


class FrameStream:
    """The frames of a capture file, window by window, as :class:`~kafkalab.dissect.frame.Frame`s in frame
    order: each window's rows become Frames and are let go, so memory is bounded by a window, the requests
    still waiting for their response and the general path's open connections. A request is given out before
    its response exists; its ``response_frame`` and ``latency_ms`` are filled in on the same object when the
    response is seen (:meth:`awaiting_response` says whether it may still be). Raises :class:`Bail` (before
    any frame) for a file the general pipeline must read."""

    def __init__(self, data, kafka_ports: frozenset, diagnostics: list[str], bar=None) -> None:
        self.conns, _, self.packets = plan(data, kafka_ports, keep=False, window=STREAM_WINDOW)
        self._data, self._ports, self._notes, self._bar = data, kafka_ports, diagnostics, bar
        self.analyzer = None
        self._open: dict[int, object] = {}              # row -> a regular connection's request still waiting
        self._waiting: set[int] = set()                 # ... the ids of those Frames

    def awaiting_response(self, frame) -> bool:
        """True while ``frame`` (a request) waits for a response that may still come."""
        if self.conns[frame.stream].irregular:
            return self.analyzer is not None and self.analyzer.awaiting_response(frame)
        return id(frame) in self._waiting

    def __iter__(self):
        from .bulk import _decode

        data, conns = self._data, self.conns
        columns, packet_conn = [[] for _ in range(11)], []
        events = window_events(data, conns, self._ports, None, columns, packet_conn, STREAM_WINDOW)
        decoder = _decode(data, columns, conns, packet_conn, events, self._ports, whole=False)
        row_columns, objects, extras, pairs, inferred_at, self.analyzer = next(decoder)
        self.analyzer.diagnostics = self._notes
        self.analyzer.packet_count = self.packets
        base = 0
        try:
            for end in decoder:
                if self._bar is not None:
                    self._bar.update(len(packet_conn))
                made = self._frames(base, row_columns, objects, extras, inferred_at)
                self._pair(base, made, pairs)
                for column in row_columns:
                    column.clear()
                base = end
                yield from made
        finally:
            if self._bar is not None:
                self._bar.close()

    def _frames(self, base: int, columns: list, objects: dict, extras: dict, inferred_at: list) -> list:
        """The window's rows (``columns`` in the row layout, the pairing ones empty; numbered from ``base``)
        as Frames (the general path's are its own objects)."""
        from kafkalab.dissect.frame import frame_from_row

        from .frame_store import R_DIAGNOSTICS, R_FRAME, R_OFFSET, R_RAW, R_TOPICS, R_TS

        data, view = self._data, memoryview(self._data)
        inferred = set(inferred_at)
        inferred_at.clear()
        made = []
        for k in PAIRING:                           # None here, filled in below and by _pair
            columns[k][:] = [None] * len(columns[R_FRAME])
        for j, values in enumerate(zip(*columns)):
            i = base + j
            frame = objects.pop(i, None) if objects else None
            if frame is None:
                row = list(values[:R_TS + 1])
                row[R_INFERRED] = i in inferred
                row[R_TOPICS], row[R_DIAGNOSTICS] = list(row[R_TOPICS]), list(row[R_DIAGNOSTICS])
                where = values[R_RAW]
                raw = data[where[0]:where[1]] if len(where) == 2 else span_bytes(view, where)
                message, topic_ids = extras.pop(i, (None, None)) if extras else (None, None)
                frame = frame_from_row(row + [raw, values[R_OFFSET], topic_ids, message])
                if frame.kind == "request":
                    self._open[i] = frame
            made.append(frame)
        return made

    def _pair(self, base: int, made: list, pairs: list) -> None:
        """Link the pairs completed in the window; forget requests no longer waiting."""
        for asked, answer, asked_frame, answer_frame, latency in pairs:
            request = made[asked - base] if asked >= base else self._open[asked]
            response = made[answer - base]
            request.response_frame, response.request_frame = answer_frame, asked_frame
            request.latency_ms = response.latency_ms = latency
        pairs.clear()
        if self._open:
            conns = self.conns
            self._open = {i: frame for i, frame in self._open.items()
                          if (conns[frame.stream].asked.in_flight.get(frame.correlation_id) or (None,))[0] == i}
            self._waiting = {id(frame) for frame in self._open.values()}
