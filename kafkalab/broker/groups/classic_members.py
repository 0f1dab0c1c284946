"""A classic group's members and the answers they wait for.

Owns: what a member says when it joins (:class:`MemberInfo`, :class:`JoinRequest`), what the group keeps of
it (:class:`Member`), a held-back JoinGroup or SyncGroup answer (:class:`Waiter`), and the shapes of those
answers when they carry an error (:func:`join_error`, :func:`sync_answer`), which the coordinator and the
request handlers also send. The group's rules about members are :mod:`.classic`.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .classic import ClassicGroup


@dataclass
class Waiter:
    """A JoinGroup or SyncGroup answer to come: ``result`` is the response body once the group decides."""
    result: dict | None = None


@dataclass
class MemberInfo:
    """What a member says about itself when it joins."""
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]       # (name, metadata) in the member's order of preference


@dataclass
class JoinRequest(MemberInfo):
    protocol_type: str = ""
    require_member_id: bool = True           # JoinGroup v4+ (KIP-394)
    skip_assignment_ok: bool = True          # JoinGroup v9+ can tell a static leader not to assign again


@dataclass
class Member(MemberInfo):
    assignment: bytes = b""
    last_seen_ms: int = 0
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None

    def metadata(self, protocol: str | None) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def alive(self, now_ms: int) -> bool:
        return self.join_waiter is not None or self.sync_waiter is not None or \
            now_ms < self.last_seen_ms + self.session_timeout_ms


def new_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


def join_error(code: int, member_id: str = "") -> dict:
    return {"error_code": code, "generation_id": -1, "protocol_type": None, "protocol_name": "", "leader": "",
            "skip_assignment": False, "member_id": member_id, "members": []}


def sync_answer(code: int, group: ClassicGroup | None = None, assignment: bytes = b"") -> dict:
    return {"error_code": code, "protocol_type": group.protocol_type if group else None,
            "protocol_name": group.protocol if group else None, "assignment": assignment}
