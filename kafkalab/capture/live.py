"""Live capture: a Linux packet socket read in a background thread, feeding the same pipeline as files.

    with kafkalab.capture.sniff(iface="lo", ports=[9092]) as live:
        ...                        # clients talk
        live.frames                # the frames table so far (rebuilt only when new frames arrived)
    live.capture()                 # a Capture (frames, exchanges, records, connections) of everything seen

Owns: the capture socket and its reader thread, handing each packet to an :class:`~.analyzer.Analyzer` under a
lock, collecting the frames it completes (``frame_list``, a queue for :meth:`LiveCapture.frames_iter`, an
optional ``on_frame`` callback run in the reader thread), and optionally writing every packet as captured to a
pcap file (``write=``, raw IP packets). Needs no libpcap, tcpdump or scapy: the socket is ``AF_PACKET`` in
cooked mode (every packet starts at its IP header, on any interface), and the port filter is a classic BPF
program kafkalab builds (:mod:`.bpf`) and the kernel runs before any packet reaches the socket; should the
kernel refuse it, the reader runs the same program in Python on every packet instead. Needs Linux and the
right to capture (root or CAP_NET_RAW); failures raise :class:`SniffError` with the reason and the remedy.

Why live packets go through the general path (the :class:`~.analyzer.Analyzer`) and not the engine's bulk
stages (:mod:`.engine`): the bulk stages may cut a connection's frames in bulk only once the connection is
known to be *regular* to its end (no loss, no reordering, both SYNs, whole frames), which a file reader learns
in a first pass over the whole capture, before any frame is given out. A live capture has no end to look at:
a connection regular so far may lose a segment in the next packet, and a frame already given out cannot be
taken back. The general path is the engine's streams-and-frames stage for exactly that case (it reassembles
and resynchronises packet by packet, and its frames equal the bulk stages' on regular connections: the
engine's tests check that on every capture), and a one-packet window through the bulk stages would only add
numpy calls per packet. So a live capture and a file give the same rows, through the one stage that can
work without seeing the end. A pcap written with ``write=`` is read back by the engine.
"""
from __future__ import annotations

import errno
import queue
import socket
import struct
import threading
import time
from typing import Callable, Iterable, Iterator

from kafkalab.dissect.frame import Frame
from kafkalab.pcap import CaptureError, LinkRecord, PacketDecoder
from kafkalab.pcap.writer import LinkPcapWriter

from . import bpf
from .analyzer import DEFAULT_PORTS, Analyzer
from .capture import Capture, gc_paused

_DONE = object()
LINKTYPE_RAW = 101                  # pcap link type of packets that start at their IP header
ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SOL_PACKET, PACKET_STATISTICS = 263, 6
RECEIVE_BUFFER = 8 << 20


class SniffError(CaptureError):
    """Sniffing could not start or failed (no such interface, no permission, not Linux)."""


class LiveCapture:
    """A running (or finished) live capture; use :func:`sniff` to make one. ``iface`` None: every interface;
    ``any_port``: every TCP packet (Kafka is then recognised from the traffic)."""

    def __init__(self, iface: str | None = "lo", ports: Iterable[int] | None = None, *, any_port: bool = False,
                 write: str | None = None, on_frame: Callable[[Frame], None] | None = None,
                 snaplen: int = bpf.DEFAULT_SNAPLEN) -> None:
        self.iface = iface
        self.ports = list(ports or ())
        kafka_ports = None if any_port else DEFAULT_PORTS | set(self.ports)
        self.bpf = bpf.describe(kafka_ports)
        self.program = bpf.tcp_port_filter(kafka_ports, snaplen=snaplen)
        self.kernel_filter = False              # whether the kernel runs the program (else only Python does)
        self.analyzer = Analyzer(self.ports)
        self.frame_list: list[Frame] = []
        self.diagnostics: list[str] = []
        self.on_frame = on_frame
        self.packets = 0
        self.error: BaseException | None = None
        self._decoder = PacketDecoder()
        self._write = write
        self._snaplen = snaplen
        self._writer: LinkPcapWriter | None = None
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._table = None
        self._table_rows = -1
        self._finished = False

    # ------------------------------------------------------------ lifecycle

    def start(self) -> LiveCapture:
        self._socket, self.kernel_filter = open_socket(self.iface, self.program, self.diagnostics)
        if self._write is not None:
            try:
                self._writer = LinkPcapWriter(self._write, LINKTYPE_RAW, snaplen=self._snaplen)
            except OSError as exc:
                self._socket.close()
                self._socket = None
                raise SniffError(f"cannot write {self._write}: {exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._read, name=f"kafkalab-sniff-{self.iface or 'any'}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> LiveCapture:
        """Stop sniffing and flush the pipeline (open connections' last frames, end-of-capture gaps)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            thread.join()
        sock, self._socket = self._socket, None
        if sock is not None:
            self._note_drops(sock)
            sock.close()
        with self._lock:
            if not self._finished:
                self._finished = True
                self._deliver(self.analyzer.finish())
                if self._writer is not None:
                    self._writer.close()
        self._queue.put(_DONE)
        return self

    def __enter__(self) -> LiveCapture:
        return self if self._thread is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None

    # ------------------------------------------------------------ the reader thread

    def _read(self) -> None:
        """Receive until stopped: each packet the filter keeps goes to the pcap file and the analyzer."""
        sock, buffer = self._socket, bytearray(self._snaplen)
        sock.settimeout(0.1)
        while not self._stopping.is_set():
            try:
                size, ancillary, _, address = sock.recvmsg_into([buffer], socket.CMSG_SPACE(16))
            except TimeoutError:
                continue
            except OSError as exc:
                self.error = exc
                self.diagnostics.append(f"capture socket failed: {exc}")
                return
            data = bytes(buffer[:size])
            if self.kernel_filter or bpf.run(self.program, data, bpf.PacketInfo(*address[1:4])):
                self._on_packet(data, _timestamp_ns(ancillary))

    def _on_packet(self, data: bytes, ts_ns: int) -> None:
        try:
            with self._lock:
                if self._finished:
                    return
                self.packets += 1
                if self._writer is not None:
                    self._writer.write(data, ts_ns / 1e9)
                tcp = self._decoder.decode(LinkRecord(self.packets, ts_ns, LINKTYPE_RAW, data, len(data)))
                if tcp is not None:
                    self._deliver(self.analyzer.feed(tcp))
        except Exception as exc:               # noqa: BLE001 - never kill the reader thread; keep the reason
            self.error = exc
            self.diagnostics.append(f"packet {self.packets}: {type(exc).__name__}: {exc}")

    def _note_drops(self, sock: socket.socket) -> None:
        try:
            _, drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        except OSError:
            return
        if drops:
            self.diagnostics.append(f"the kernel dropped {drops} packets (the reader fell behind)")

    def _deliver(self, frames: list[Frame]) -> None:
        for frame in frames:
            self.frame_list.append(frame)
            self._queue.put(frame)
            if self.on_frame is not None:
                self.on_frame(frame)

    # ------------------------------------------------------------ reading what was seen

    def __len__(self) -> int:
        return len(self.frame_list)

    @property
    def frames(self):
        """The frames table of everything seen so far (rebuilt only when frames were added)."""
        from kafkalab.dissect.frames_table import frames_table

        with self._lock:
            snapshot = list(self.frame_list)
        if self._table is None or len(snapshot) != self._table_rows:
            with gc_paused():
                self._table = frames_table(snapshot)
            self._table_rows = len(snapshot)
        return self._table

    def capture(self) -> Capture:
        """A :class:`Capture` of the frames so far (its tables, ``cap[n]``...)."""
        with self._lock:
            return Capture(list(self.frame_list), self.analyzer, list(self.diagnostics))

    def frames_iter(self, timeout: float | None = None) -> Iterator[Frame]:
        """Frames as they complete, until the capture stops or ``timeout`` seconds have passed (starts the
        capture if needed and stops it at the end)."""
        if self._thread is None and not self._finished:
            self.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                wait = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
                try:
                    item = self._queue.get(timeout=wait)
                except queue.Empty:
                    if deadline is not None and time.monotonic() >= deadline:
                        return
                    continue
                if item is _DONE:
                    return
                yield item
        finally:
            if self._thread is not None:
                self.stop()

    def wait_for(self, predicate: Callable[[list[Frame]], bool], timeout: float = 10.0) -> bool:
        """Poll until ``predicate(frame_list)`` holds (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if predicate(self.frame_list):
                    return True
            time.sleep(0.02)
        with self._lock:
            return predicate(self.frame_list)


def sniff(iface: str | None = "lo", ports: Iterable[int] | None = None, **options) -> LiveCapture:
    """Start a live capture in a background thread (see :class:`LiveCapture` for the options); use it as a
    context manager, or call ``stop()``."""
    return LiveCapture(iface, ports, **options).start()


# ---------------------------------------------------------------- the socket

def open_socket(iface: str | None, program: list[bpf.Instruction],
                diagnostics: list[str]) -> tuple[socket.socket, bool]:
    """A cooked packet socket on ``iface`` (None: every interface) with timestamps on, and whether the kernel
    runs ``program`` as its filter. No packet reaches it unjudged: on one interface it takes none until it is
    bound, after the filter is attached; on every interface (no bind to wait for) a drop-all filter goes first
    and whatever was queued before it is discarded, as libpcap does."""
    if not hasattr(socket, "AF_PACKET"):
        raise SniffError("live capture needs Linux packet sockets; elsewhere capture with tcpdump or Wireshark "
                         "and run kafkalab decode on the file")
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, 0 if iface else socket.htons(ETH_P_ALL))
    except PermissionError:
        raise SniffError("no permission to capture: packet sockets need root or CAP_NET_RAW (run with sudo, "
                         "or grant it: sudo setcap cap_net_raw+ep \"$(readlink -f \"$(which python3)\")\")") from None
    try:
        if iface is None and _attach(sock, bpf.DROP_ALL, diagnostics):
            _drain(sock)
        attached = _attach(sock, program, diagnostics)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        _grow_receive_buffer(sock)
        if iface:
            sock.bind((iface, ETH_P_ALL))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.ENODEV:
            raise SniffError(f"no interface named {iface!r}; this machine has {', '.join(interfaces())}") from None
        raise SniffError(f"cannot capture on {iface!r}: {exc.strerror or exc}") from None
    return sock, attached


def _attach(sock: socket.socket, program: list[bpf.Instruction], diagnostics: list[str]) -> bool:
    try:
        bpf.attach(sock, program)
    except OSError as exc:
        if not any(note.startswith("the kernel refused") for note in diagnostics):
            diagnostics.append(f"the kernel refused the capture filter ({exc.strerror}); filtering in Python")
        return False
    return True


def _drain(sock: socket.socket) -> None:
    sock.setblocking(False)
    try:
        while True:
            sock.recv(1)
    except BlockingIOError:
        pass
    finally:
        sock.setblocking(True)


def interfaces() -> list[str]:
    """The names of this machine's network interfaces."""
    return [name for _, name in socket.if_nameindex()]


def _grow_receive_buffer(sock: socket.socket) -> None:
    """Room for bursts while the reader thread waits for the GIL (root may exceed the system's maximum)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), RECEIVE_BUFFER)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)


def _timestamp_ns(ancillary: list) -> int:
    """The kernel's receive time (SCM_TIMESTAMPNS), else now."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            seconds, nanos = struct.unpack("qq", data[:16])
            return seconds * 1_000_000_000 + nanos
    return time.time_ns()
