"""What the group handlers share: answering when the coordinator decides (JoinGroup and SyncGroup long-poll
like Fetch) and the client address Kafka reports for members."""
from __future__ import annotations

from ..groups import Waiter
from .base import Wait


def when_decided(result: dict | Waiter, max_wait_ms: int, give_up: dict) -> dict | Wait:
    """The body now, or a :class:`Wait` retried whenever the coordinator changes something (and by the
    server's ticks) until the waiter has its answer; past ``max_wait_ms`` the answer is ``give_up``."""
    if not isinstance(result, Waiter):
        return {"throttle_time_ms": 0, **result}

    def attempt(now_ms: int, final: bool) -> dict | None:
        if result.result is not None:
            return {"throttle_time_ms": 0, **result.result}
        return {"throttle_time_ms": 0, **give_up} if final else None
    return Wait(max_wait_ms, attempt)


def client_host(ctx) -> str:
    """Kafka's form of a member's address: "/" and the client's IP."""
    host = ctx.client_address.rsplit(":", 1)[0].strip("[]") if ctx.client_address else ""
    return f"/{host}"
