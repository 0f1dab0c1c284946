"""Captures to Kafka frames: TCP reassembly, frame cutting with resynchronisation, pairing, inference.

``read_capture(path)`` returns a :class:`Capture` (frames, exchanges, records and connections tables;
``cap[n]`` is frame n); ``iter_frames(path)`` streams :class:`~kafkalab.dissect.frame.Frame`s. The sans-IO
core is :class:`Analyzer` (packets in, frames out) over :class:`HalfStream` (one direction's reassembly).
"""
from kafkalab.pcap import CaptureError

from .analyzer import DEFAULT_PORTS, Analyzer
from .capture import Capture, format_frame, iter_frames, read_capture
from .reassembly import DataReceived, GapDetected, HalfStream, StreamEnded

__all__ = ["Analyzer", "Capture", "CaptureError", "DEFAULT_PORTS", "DataReceived", "GapDetected",
           "HalfStream", "StreamEnded", "format_frame", "iter_frames", "read_capture"]
