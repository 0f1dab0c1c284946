"""Live capture: scapy sniffs an interface in a background thread and feeds the same pipeline as files.

    with kafkalab.capture.sniff(iface="lo", ports=[9092]) as live:
        ...                        # clients talk
        live.frames                # the frames table so far (rebuilt only when new frames arrived)
    live.capture()                 # a Capture (frames, exchanges, records, connections) of everything seen

Owns: the sniffer thread (scapy's ``AsyncSniffer``; scapy is imported only here, when sniffing starts),
handing each packet to an :class:`~.analyzer.Analyzer` under a lock, collecting the frames it completes
(``frame_list``, a queue for :meth:`LiveCapture.frames_iter`, an optional ``on_frame`` callback run in the
sniffer thread), and optionally writing every packet as captured to a pcap file (``write=``). Needs scapy
and the right to capture (root or CAP_NET_RAW); failures raise :class:`SniffError` with the reason.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Callable, Iterable, Iterator

from kafkalab.dissect.frame import Frame
from kafkalab.pcap import CaptureError
from kafkalab.pcap.writer import LinkPcapWriter

from .analyzer import DEFAULT_PORTS, Analyzer
from .capture import Capture, gc_paused
from .scapy_packets import from_scapy, linktype_of

_DONE = object()


class SniffError(CaptureError):
    """Sniffing could not start or failed (scapy missing, no such interface, no permission)."""


def bpf_for(ports: Iterable[int] | None) -> str:
    """A BPF filter for TCP on the Kafka ports (the defaults plus ``ports``)."""
    every = sorted(DEFAULT_PORTS | set(ports or ()))
    return "tcp and (" + " or ".join(f"port {p}" for p in every) + ")"


class LiveCapture:
    """A running (or finished) live capture; use :func:`sniff` to make one."""

    def __init__(self, iface: str | None = "lo", ports: Iterable[int] | None = None, *, bpf: str | None = None,
                 any_port: bool = False, write: str | None = None, on_frame: Callable[[Frame], None] | None = None,
                 snaplen: int = 262144) -> None:
        self.iface = iface
        self.ports = list(ports or ())
        self.bpf = bpf if bpf is not None else ("tcp" if any_port else bpf_for(self.ports))
        self.analyzer = Analyzer(self.ports)
        self.frame_list: list[Frame] = []
        self.diagnostics: list[str] = []
        self.on_frame = on_frame
        self.packets = 0
        self.error: BaseException | None = None
        self._write = write
        self._snaplen = snaplen
        self._writer: LinkPcapWriter | None = None
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._sniffer = None
        self._table = None
        self._table_rows = -1
        self._finished = False

    # ------------------------------------------------------------ lifecycle

    def start(self) -> LiveCapture:
        try:
            from scapy.sendrecv import AsyncSniffer
        except ImportError:
            raise SniffError("live capture needs scapy (pip install scapy)") from None
        self._started = threading.Event()
        kwargs = {"filter": self.bpf, "prn": self._on_packet, "store": False,
                  "started_callback": self._started.set}
        if self.iface is not None:
            kwargs["iface"] = self.iface
        self._sniffer = AsyncSniffer(**kwargs)
        runtime_log = logging.getLogger("scapy.runtime")
        level = runtime_log.level
        runtime_log.setLevel(logging.ERROR)     # "unable to guess type" for lo: the bytes tell us (scapy_packets)
        try:
            self._sniffer.start()
            self._wait_until_running()
        except SniffError:
            raise
        except PermissionError as exc:
            raise SniffError(f"no permission to capture on {self.iface!r} (run as root or grant CAP_NET_RAW): "
                             f"{exc}") from None
        except OSError as exc:
            raise SniffError(f"cannot capture on {self.iface!r}: {exc}") from None
        finally:
            runtime_log.setLevel(level)
        return self

    def _wait_until_running(self, timeout: float = 5.0) -> None:
        """AsyncSniffer opens its socket in its own thread: wait for that, and report its failure."""
        deadline = time.monotonic() + timeout
        sniffer = self._sniffer
        while time.monotonic() < deadline:
            if self._started.wait(0.02):
                return
            thread = getattr(sniffer, "thread", None)
            if thread is not None and not thread.is_alive():
                self._sniffer = None
                error = getattr(sniffer, "exception", None)
                if isinstance(error, PermissionError):
                    raise SniffError(f"no permission to capture on {self.iface!r} (run as root or grant "
                                     f"CAP_NET_RAW)")
                raise SniffError(f"cannot capture on {self.iface!r}: {error or 'the sniffer stopped'}")
        self._sniffer = None
        raise SniffError(f"capture on {self.iface!r} did not start within {timeout:.0f} s")

    def stop(self) -> LiveCapture:
        """Stop sniffing and flush the pipeline (open connections' last frames, end-of-capture gaps)."""
        sniffer, self._sniffer = self._sniffer, None
        if sniffer is not None:
            try:
                sniffer.stop(join=True)
            except Exception as exc:           # noqa: BLE001 - scapy raises its own types on a dead sniffer
                self.diagnostics.append(f"sniffer stopped with an error: {exc}")
        with self._lock:
            if not self._finished:
                self._finished = True
                self._deliver(self.analyzer.finish())
                if self._writer is not None:
                    self._writer.close()
        self._queue.put(_DONE)
        return self

    def __enter__(self) -> LiveCapture:
        return self if self._sniffer is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._sniffer is not None

    # ------------------------------------------------------------ the sniffer thread

    def _on_packet(self, packet) -> None:
        try:
            with self._lock:
                if self._finished:
                    return
                self.packets += 1
                if self._write is not None:
                    self._record(packet)
                tcp = from_scapy(packet)
                if tcp is not None:
                    self._deliver(self.analyzer.feed(tcp))
        except Exception as exc:               # noqa: BLE001 - never kill the sniffer thread; keep the reason
            self.error = exc
            self.diagnostics.append(f"packet {self.packets}: {type(exc).__name__}: {exc}")

    def _record(self, packet) -> None:
        data = bytes(packet)
        linktype = linktype_of(packet, data)
        if self._writer is None:
            self._writer = LinkPcapWriter(self._write, linktype, snaplen=self._snaplen)
        if linktype != self._writer.linktype:
            self.diagnostics.append(f"packet {self.packets}: link type {linktype} differs from the file's "
                                    f"{self._writer.linktype}; not written")
            return
        self._writer.write(data, float(getattr(packet, "time", 0.0) or 0.0))

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
        from kafkalab.dissect.frame import frames_table

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
        if self._sniffer is None and not self._finished:
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
            if self._sniffer is not None:
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
