"""Captures to Kafka frames: TCP reassembly, frame cutting with resynchronisation, pairing, inference.

``read_capture(path)`` returns a :class:`Capture` (frames, exchanges, records and connections tables;
``cap[n]`` is frame n; ``cap.filter("...")``); ``iter_frames(path)`` streams
:class:`~kafkalab.dissect.frame.Frame`s and ``write_frames(path, out)`` streams the frames table into Parquet;
``sniff(iface, ports)`` captures live (a packet socket and :mod:`.bpf`'s kernel filter). The sans-IO core
is :class:`Analyzer` (packets in, frames out) over :class:`HalfStream` (one direction's reassembly);
:mod:`.bulk` reads whole classic pcap files of regular traffic faster with the same results; :mod:`.cli`
holds the ``decode``, ``stats`` and ``sniff`` commands.
"""
from kafkalab.pcap import CaptureError

from .analyzer import DEFAULT_PORTS, Analyzer
from .capture import Capture, format_frame, iter_frames, read_capture
from .export import iter_batches, write_frames
from .live import LiveCapture, SniffError, sniff
from .reassembly import DataReceived, GapDetected, HalfStream, StreamEnded

__all__ = ["Analyzer", "Capture", "CaptureError", "DEFAULT_PORTS", "DataReceived", "GapDetected",
           "HalfStream", "LiveCapture", "SniffError", "StreamEnded", "format_frame", "iter_batches", "iter_frames",
           "read_capture", "sniff", "write_frames"]
