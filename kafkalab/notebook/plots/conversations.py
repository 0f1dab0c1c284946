"""Conversations (Wireshark's Statistics > Conversations): one row per Kafka connection of a frames table.

Works from the ``frames`` table alone, so a capture, the broker's journal, a followed live broker and Spark
results give the same rows. A capture's ``connections`` table knows more (TCP packets, gaps), but the broker's
journal has none; what both have is the Kafka frames, and that is what this counts.
"""
from __future__ import annotations

from typing import Any

from .common import frames_of

CONVERSATION_COLUMNS = ["stream", "client", "server", "frames", "requests", "responses", "client_bytes",
                        "server_bytes", "errors", "first", "last", "duration_s"]


def conversations(source: Any):
    """One row per connection (``stream``): the client (the side sending requests), the server, frames,
    requests, responses, Kafka bytes each way (``client_bytes`` sent by the client, ``server_bytes`` by the
    server; message sizes as in the frames table, so without each message's 4-byte length prefix),
    responses carrying an error, first and last frame time and the duration in seconds; ordered
    by stream."""
    import pandas as pd

    frames = frames_of(source)
    if frames.empty:
        return pd.DataFrame(columns=CONVERSATION_COLUMNS)
    data = pd.DataFrame({
        "stream": frames["stream"].astype("int64"),
        "request": (frames["kind"] == "request").fillna(False).astype(bool),
        "size": frames["size"].fillna(0).astype("int64"),
        "error": (frames["error_code"].fillna(0) != 0).astype(bool),
        "time": pd.to_datetime(frames["time"], utc=True),
        "src": frames["src"].astype("string"), "dst": frames["dst"].astype("string"),
    })
    data["response"] = ~data["request"]
    data["client_bytes"] = data["size"].where(data["request"], 0)
    data["server_bytes"] = data["size"].where(data["response"], 0)
    # the client is who sends requests; a connection seen only from its responses is named from their dst
    data["client"] = data["src"].where(data["request"], data["dst"])
    data["server"] = data["dst"].where(data["request"], data["src"])
    grouped = data.groupby("stream", sort=True)
    table = pd.DataFrame({
        "client": grouped["client"].first(), "server": grouped["server"].first(),
        "frames": grouped.size(), "requests": grouped["request"].sum(), "responses": grouped["response"].sum(),
        "client_bytes": grouped["client_bytes"].sum(), "server_bytes": grouped["server_bytes"].sum(),
        "errors": (data["error"] & data["response"]).groupby(data["stream"]).sum(),
        "first": grouped["time"].min(), "last": grouped["time"].max(),
    })
    table["duration_s"] = (table["last"] - table["first"]).dt.total_seconds()
    table = table.reset_index()
    ints = ["frames", "requests", "responses", "client_bytes", "server_bytes", "errors"]
    return table.astype({name: "int64" for name in ints})[CONVERSATION_COLUMNS]
