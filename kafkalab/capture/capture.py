"""Reading captures: ``read_capture`` (everything in memory, as tables) and ``iter_frames`` (streaming).

Inputs: a pcap/pcapng path (optionally gzip-compressed), a binary file object, or an iterable of packets
(:class:`~kafkalab.pcap.TcpPacket`, or scapy packets, converted here lazily without importing scapy).
Both readers run the capture engine (:mod:`.engine`) on a capture file it reads, and the general pipeline
packet by packet (:class:`PacketStream`) on anything else; either way the result is a :class:`Capture` holding
its frames in one :class:`~.frame_store.FrameStore`.
"""
from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from typing import Iterable, Iterator

from kafkalab.dissect import format_tree, hexdump
from kafkalab.dissect.frame import Frame
from kafkalab.pcap import TcpPacket, read_packets

from .analyzer import DEFAULT_PORTS, Analyzer
from .scapy_packets import from_scapy

PROGRESS_MIN_BYTES = 64 << 20


def _packets(source, diagnostics: list[str], progress) -> Iterator[TcpPacket]:
    if _is_file_list(source):
        for path in in_capture_order(source):
            yield from _packets(path, diagnostics, progress)
        return
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)) or hasattr(source, "read"):
        bar = _progress_bar(source, progress)
        if bar is None:
            yield from read_packets(source, diagnostics)
            return
        with bar:
            last = 0
            for packet in read_packets(source, diagnostics):
                last += 1
                if last == 4096:
                    bar.update(last)
                    last = 0
                yield packet
            bar.update(last)
        return
    for item in source:
        packet = item if isinstance(item, TcpPacket) else from_scapy(item)
        if packet is not None:
            yield packet


def _is_file_list(source) -> bool:
    return isinstance(source, (list, tuple)) and bool(source) and \
        all(isinstance(item, (str, os.PathLike)) for item in source)


def in_capture_order(paths) -> list:
    """Capture files that continue each other (a rotated capture: ``tcpdump -C/-G``, ``dumpcap -b``), in the
    order of their first TCP packet's time, whatever order they were named in. Read in that order they are
    one capture: a connection that spans files continues where the previous file left it."""
    def first_time(path) -> int:
        first = next(read_packets(path), None)
        return first.ts_ns if first is not None else 1 << 62

    return sorted(paths, key=lambda path: (first_time(path), str(path)))


def _progress_bar(source, progress):
    """A tqdm.auto bar counting packets when asked (``progress=True``) or, by default, for big files."""
    if progress is False:
        return None
    if progress is None:
        if not isinstance(source, (str, os.PathLike)):
            return None
        try:
            if os.path.getsize(source) < PROGRESS_MIN_BYTES:
                return None
        except (TypeError, ValueError, OSError):
            return None
    from tqdm.auto import tqdm

    return tqdm(unit=" packets", desc="reading capture", leave=False)


def iter_frames(source, ports: Iterable[int] | None = None, *, diagnostics: list[str] | None = None,
                progress=False) -> Iterator[Frame]:
    """Kafka frames as they complete, holding only connections' in-flight state (not the whole capture).
    A request is yielded before its response exists; its ``response_frame`` and ``latency_ms`` are filled in
    on the same object when the response is seen."""
    yield from frame_stream(source, ports, diagnostics, progress)


def frame_stream(source, ports: Iterable[int] | None = None, diagnostics: list[str] | None = None,
                 progress=False):
    """The frames of ``source`` as an iterable with ``awaiting_response(frame)``: the engine's, window by
    window (:class:`.engine.FrameStream`), for a capture file it reads; else the general pipeline's, packet
    by packet (gzip, file objects, packets, a rotated capture, files the engine refuses, and files under
    ``ENGINE_MIN_BYTES``, whose reading costs less than loading numpy: both give the same frames)."""
    notes = [] if diagnostics is None else diagnostics
    if BULK and not _is_file_list(source) and _size(source) >= ENGINE_MIN_BYTES:
        from .engine import Bail, FrameStream, mapped

        data = mapped(source)
        if data is not None:
            try:
                return FrameStream(data, DEFAULT_PORTS | frozenset(ports or ()), notes,
                                   _progress_bar(source, progress))
            except Bail:
                pass
    return PacketStream(source, ports, notes, progress)


ENGINE_MIN_BYTES = 1 << 20


def _size(source) -> int:
    try:
        return os.path.getsize(source) if isinstance(source, (str, os.PathLike)) else -1
    except OSError:
        return -1


class PacketStream:
    """The general pipeline over a source's packets, one by one (see :func:`frame_stream`)."""

    def __init__(self, source, ports: Iterable[int] | None, diagnostics: list[str], progress) -> None:
        self.analyzer = Analyzer(ports)
        self.analyzer.diagnostics = diagnostics     # the file's notes and the analyzer's in one list
        self._source, self._progress = source, progress
        self.awaiting_response = self.analyzer.awaiting_response

    def __iter__(self) -> Iterator[Frame]:
        analyzer = self.analyzer
        for packet in _packets(self._source, analyzer.diagnostics, self._progress):
            packet_frames = analyzer.feed(packet)
            if packet_frames:
                yield from packet_frames
        yield from analyzer.finish()


class Capture:
    """A whole capture: frames (objects and tables), exchanges, records and connections.

    The frames are held as a :class:`~.frame_store.FrameStore` whoever read them: the engine's rows (Frame
    objects made on first access) or Frames of the general pipeline (``frames`` a list); ``frame_list``
    makes them all. A capture file the engine read leaves large Produce requests and most Produce and Fetch
    responses undescribed until the frames table, a row or a Frame is first asked for (see
    ``FrameStore.defer``): ``records`` alone never describes them, and every table is the same whatever is
    asked first."""

    def __init__(self, frames, analyzer: Analyzer, diagnostics: list[str], *,
                 connections: list[dict] | None = None, packets: int | None = None,
                 streams: int | None = None) -> None:
        if isinstance(frames, list):
            from .frame_store import FrameStore

            frames = FrameStore.of_frames(frames)
        self._store = frames
        self._list: list[Frame] | None = None
        self.diagnostics = diagnostics
        self._analyzer = analyzer
        self._extra_connections = connections or []
        self._packets = analyzer.packet_count if packets is None else packets
        self._streams = len(analyzer.sessions) if streams is None else streams
        self._tables: dict[str, object] = {}

    @property
    def frame_list(self) -> list[Frame]:
        """Every frame as a Frame object (made on first use where the read kept only table rows)."""
        if self._list is None:
            with gc_paused():
                self._list = self._store.frames()
        return self._list

    def rows(self) -> list:
        """Every frame as a light row (see :mod:`.rows`): the frames table's values, read like a Frame's
        (anything else comes from the Frame, made on first use)."""
        from .rows import frame_rows

        with gc_paused():
            return frame_rows(self._store.columns, self.__getitem__)

    def __len__(self) -> int:
        return len(self._store)

    def __iter__(self) -> Iterator[Frame]:
        return (self._store.frame(i) for i in range(len(self._store)))

    def __getitem__(self, number: int) -> Frame:
        """Frame ``number`` (1-based, as in the ``frame`` column)."""
        if not isinstance(number, int) or not 1 <= number <= len(self):
            raise IndexError(f"frame numbers run from 1 to {len(self)}, not {number!r}")
        return self._store.frame(number - 1)

    def __repr__(self) -> str:
        return f"<Capture: {len(self)} Kafka frames in {self._streams} TCP streams, {self._packets} TCP packets>"

    def _table(self, name: str, build):
        if name not in self._tables:
            with gc_paused():
                self._tables[name] = build()
        return self._tables[name]

    @property
    def frames(self):
        return self._table("frames", lambda: self._store.table)

    @property
    def exchanges(self):
        from kafkalab.dissect.tables import exchanges_table
        return self._table("exchanges", lambda: exchanges_table(self.frame_list))

    @property
    def records(self):
        from kafkalab.dissect.records_table import records_table

        from .rows import record_sources        # read from the held bytes: no Frame objects made

        def build():
            with record_sources(self._store) as frames:
                return records_table(frames)
        return self._table("records", build)

    @property
    def connections(self):
        from kafkalab.dissect.tables import connections_table
        return self._table("connections", lambda: connections_table(self.connection_rows()))

    def connection_rows(self) -> list[dict]:
        """The connections table's rows, in stream order: the engine's regular connections' (made as it read
        them) and those of the general path's connections that carry Kafka, all by :func:`connection_row`."""
        rows = list(self._extra_connections)
        for conn in self._analyzer.connections:
            session = self._analyzer.sessions.get(conn.index)
            if session is None or not session.kafka:
                continue
            client = conn.client or conn.endpoints[0]
            server = conn.other(client)
            rows.append(connection_row(conn, client, server, session.frames_sent[client],
                                       session.frames_sent[server], session.client_ids))
        rows.sort(key=lambda row: row["stream"])
        return rows

    def filter(self, expression):
        """The rows of the frames table matching a filter expression (see :mod:`kafkalab.dissect.filter`),
        e.g. ``cap.filter('api_name == "Produce" and latency_ms > 5')``."""
        import numpy as np

        from kafkalab.dissect.filter import compile_filter

        predicate = compile_filter(expression)
        table = self.frames                     # test the table's rows, make no objects
        mask = np.fromiter((predicate(row) for row in table.itertuples(index=False)), dtype=bool, count=len(table))
        return self.frames[mask]

    def text(self, number: int, *, hex: bool = False) -> str:
        """Frame ``number`` like ``tshark -V`` (plus ``-x`` with ``hex=True``)."""
        return format_frame(self[number], hex=hex)


def connection_row(conn, client, server, requests: int, responses: int, client_ids) -> dict:
    """One connection's row of the connections table: the one place its columns are made, for the general
    path's :class:`~.connection.Connection` and the engine's regular :class:`~.streams.Conn` alike. Both
    carry the TCP facts under the same names (``index``, ``first_ts``, ``last_ts``, ``state``, ``gaps``,
    ``gap_bytes``, ``midstream``, and per side ``names``, ``payload_bytes`` and ``packets``), a side being
    what indexes them (an (ip, port) endpoint, or the engine's 0 and 1); ``client`` and ``server`` are the
    two sides. The Kafka facts come from whoever decoded the frames: the frames each side sent and the
    client ids the requests named."""
    names = conn.names
    return {
        "stream": conn.index, "client": names[client], "server": names[server],
        "first_time": conn.first_ts, "last_time": conn.last_ts,
        "client_bytes": conn.payload_bytes[client], "server_bytes": conn.payload_bytes[server],
        "client_packets": conn.packets[client], "server_packets": conn.packets[server],
        "requests": requests, "responses": responses, "client_ids": list(client_ids),
        "gaps": conn.gaps, "gap_bytes": conn.gap_bytes, "midstream": conn.midstream, "state": conn.state,
    }


def format_frame(frame: Frame, *, hex: bool = False) -> str:
    head = (f"Frame {frame.frame}: stream {frame.stream}, {frame.src} → {frame.dst}, "
            f"{len(frame.raw)} bytes, {frame.time.isoformat()}")
    lines = [head, f"Kafka {frame.summary}"]
    if frame.request_frame is not None:
        lines.append(f"[response to frame {frame.request_frame}, {frame.latency_ms} ms]")
    if frame.response_frame is not None:
        lines.append(f"[response in frame {frame.response_frame}]")
    lines.extend(f"[!] {d}" for d in frame.diagnostics)
    tree = frame.tree
    if tree is not None:
        lines.append(format_tree(tree))
    if hex:
        lines.append(hexdump(frame.raw))
    return "\n".join(lines)


def read_capture(path_or_packets, ports: Iterable[int] | None = None, progress=None) -> Capture:
    """Read a whole capture (pcap/pcapng path, gzip or not, a file object, or packets) into a Capture.
    A list of paths is read as one capture, the files in capture-time order (see :func:`in_capture_order`)."""
    with gc_paused():
        if BULK and not _is_file_list(path_or_packets):
            from .bulk import read_bulk

            capture = read_bulk(path_or_packets, ports)
            if capture is not None:
                return capture
        diagnostics: list[str] = []
        stream = PacketStream(path_or_packets, ports, diagnostics, progress)
        frames = list(stream)
    return Capture(frames, stream.analyzer, diagnostics)


BULK = True         # readers try the engine first (tests switch it off to compare with the general pipeline)


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while a capture is read into memory. Reading allocates millions of
    small, long-lived, acyclic objects (frames, bodies); each collection would walk all of them again,
    which costs more than the reading itself. Refcounting still frees everything as usual, and the collector
    is switched back on (if it was on) afterwards.

    Switched back on, the collector would first walk every object made meanwhile (they are all still in the
    youngest generation: about 0.2 s for a 50 MB capture), then again as they age. They are moved straight to
    the oldest generation instead (``freeze`` then ``unfreeze``: a list splice, no walk), where only a full
    collection looks at them; cycles among them are still found then. Skipped when the program itself froze
    objects (``gc.freeze`` before a fork), which ``unfreeze`` would undo."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()
