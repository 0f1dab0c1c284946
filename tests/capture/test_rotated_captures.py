"""A rotated capture (several files that continue each other) read as one: connections spanning files go on
where the previous file left them, whatever order the files are named in."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kafkalab.capture import iter_frames, read_capture
from kafkalab.pcap.index import pcap_records

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def _rotate(path: Path, parts: int, into: Path) -> list[Path]:
    """The capture cut into ``parts`` files at record boundaries (mid-connection, mid-frame), as
    ``tcpdump -C`` would have written them."""
    data = path.read_bytes()
    starts = (pcap_records(data).start - 16).tolist() + [len(data)]
    step = -(-(len(starts) - 1) // parts)
    files = []
    for k, at in enumerate(range(0, len(starts) - 1, step)):
        out = into / f"{path.stem}.{k}.pcap"
        out.write_bytes(data[:24] + data[starts[at]:starts[min(at + step, len(starts) - 1)]])
        files.append(out)
    return files


@pytest.mark.parametrize("name", ["produce-consume-gzip", "lossy"])
def test_rotated_files_read_as_the_one_capture(name: str, tmp_path: Path) -> None:
    whole = read_capture(CAPTURES / f"{name}.pcap")
    files = _rotate(CAPTURES / f"{name}.pcap", 3, tmp_path)
    assert len(files) == 3
    for order in (files, files[::-1], [files[1], files[2], files[0]]):
        rotated = read_capture(order)
        pd.testing.assert_frame_equal(rotated.frames, whole.frames)
        pd.testing.assert_frame_equal(rotated.connections, whole.connections)
    streamed = [(f.frame, f.raw, f.request_frame) for f in iter_frames(files[::-1])]
    assert streamed == [(f.frame, f.raw, f.request_frame) for f in whole]
