"""Reading record sets back with kafka-python, the independent reader the record tests compare with."""
from __future__ import annotations


def read_with_kafka_python(memory_records_cls, data: bytes):
    """[(offset, key, value, headers, timestamp)] as kafka-python reads ``data``; checks every CRC."""
    out = []
    records = memory_records_cls(data)
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        for rec in batch:
            out.append((rec.offset, rec.key, rec.value, [tuple(h) for h in rec.headers], rec.timestamp))
    return out
