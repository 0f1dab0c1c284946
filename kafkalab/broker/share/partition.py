"""One share-partition's delivery state (KIP-932): which offsets are available, acquired, or done.

Records from the share-partition start offset (SPSO) on are *available* until a ShareFetch *acquires* them
for one member, under an acquisition lock that expires after ``lock_ms``. The member then accepts (done),
releases (available again) or rejects (archived, never delivered again) each offset. Every acquisition counts
a delivery; an offset delivered ``max_deliveries`` times and released or timed out is archived. The SPSO
advances over offsets that are done, so the in-flight window stays small (at most ``max_in_flight``).
"""
from __future__ import annotations

from kafkalab.protocol import ErrorCode

GAP, ACCEPT, RELEASE, REJECT = 0, 1, 2, 3           # acknowledge types on the wire
AVAILABLE, ACQUIRED, DONE = "available", "acquired", "done"


class SharePartition:
    def __init__(self, start_offset: int = 0, max_deliveries: int = 5, max_in_flight: int = 2000) -> None:
        self.spso = start_offset
        self.max_deliveries, self.max_in_flight = max_deliveries, max_in_flight
        self.offsets: dict[int, list] = {}          # offset -> [state, deliveries, lock deadline ms, member]

    def acquire(self, member: str, end_offset: int, max_records: int, now_ms: int, lock_ms: int
                ) -> list[tuple[int, int, int]]:
        """Acquire up to ``max_records`` available offsets below ``end_offset`` for ``member``; returns
        (first, last, delivery count) ranges."""
        self.expire(now_ms)
        ranges: list[list[int]] = []
        offset, taken = self.spso, 0
        while offset < min(end_offset, self.spso + self.max_in_flight) and taken < max_records:
            entry = self.offsets.get(offset)
            if entry is None or entry[0] == AVAILABLE:
                deliveries = (entry[1] if entry else 0) + 1
                self.offsets[offset] = [ACQUIRED, deliveries, now_ms + lock_ms, member]
                if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == deliveries:
                    ranges[-1][1] = offset
                else:
                    ranges.append([offset, offset, deliveries])
                taken += 1
            offset += 1
        return [tuple(r) for r in ranges]

    def acknowledge(self, member: str, first: int, last: int, types: list[int]) -> int:
        """Apply one acknowledgement batch; the error code (INVALID_RECORD_STATE for offsets this member does
        not hold, INVALID_REQUEST for a malformed batch)."""
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            return ErrorCode.INVALID_REQUEST
        for i, offset in enumerate(range(first, last + 1)):
            kind = types[0] if len(types) == 1 else types[i]
            entry = self.offsets.get(offset)
            if kind == GAP:
                self.offsets[offset] = [DONE, 0, 0, None]
                continue
            if entry is None or entry[0] != ACQUIRED or entry[3] != member or kind not in (ACCEPT, RELEASE, REJECT):
                return ErrorCode.INVALID_RECORD_STATE
            if kind == RELEASE and entry[1] < self.max_deliveries:
                entry[0], entry[3] = AVAILABLE, None
            else:
                entry[0] = DONE
        self._advance()
        return ErrorCode.NONE

    def release_member(self, member: str) -> None:
        """A member left: what it held becomes available again."""
        for entry in self.offsets.values():
            if entry[0] == ACQUIRED and entry[3] == member:
                self._release(entry)
        self._advance()

    def expire(self, now_ms: int) -> None:
        """Acquisition locks past their deadline release their offsets."""
        for entry in self.offsets.values():
            if entry[0] == ACQUIRED and entry[2] <= now_ms:
                self._release(entry)
        self._advance()

    def reset(self, start_offset: int) -> None:
        self.spso, self.offsets = start_offset, {}

    def delivery_state(self, offset: int) -> tuple[str, int]:
        """(state, deliveries) of an offset, for notebooks and tests."""
        if offset < self.spso:
            return DONE, 0
        entry = self.offsets.get(offset)
        return (entry[0], entry[1]) if entry else (AVAILABLE, 0)

    def _release(self, entry: list) -> None:
        entry[0], entry[3] = (AVAILABLE if entry[1] < self.max_deliveries else DONE), None

    def _advance(self) -> None:
        while self.offsets.get(self.spso, (None,))[0] == DONE:
            del self.offsets[self.spso]
            self.spso += 1
