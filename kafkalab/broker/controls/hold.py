"""Step-through: ``broker.hold(api="Fetch")`` catches the next matching exchange and parks its response.

The broker runs the handler as usual, then, instead of sending, hands the exchange to a :class:`Hold`: the
notebook sees the request's :class:`~kafkalab.dissect.frame.Frame` (``.request``, with ``.tree``) and the
response body the broker would send (``.response``, a dict it may edit), then decides: ``release()`` sends it
(``release(body)`` sends an edited body instead), ``drop()`` sends nothing and closes the connection. Until then
that connection is parked (Kafka answers a connection's requests in order); other connections carry on.
Sans-IO: the server learns of the decision through :meth:`Hold.on_decided`.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from kafkalab.protocol import api_spec, resolve_api_key

RELEASE, DROP = "release", "drop"


class Hold:
    def __init__(self, api: int | str | None = None, topic: str | None = None) -> None:
        self.api_key = None if api is None else resolve_api_key(api)
        self.topic = topic
        self.request = None                 # Frame of the held request, once caught
        self.response: dict | None = None   # the body the broker would send
        self.api_version: int | None = None
        self.decision: str | None = None
        self.edited: dict | None = None
        self._encode: Callable[[dict], bytes] | None = None     # the exchange's response encoder
        self._caught = threading.Event()
        self._lock = threading.Lock()
        self._callback: Callable[[], None] | None = None

    # --- the notebook's side ------------------------------------------------------------------------

    def wait(self, timeout: float | None = 30.0) -> Hold:
        """Block until a matching request is caught; raises TimeoutError if none comes in time."""
        if not self._caught.wait(timeout):
            raise TimeoutError(f"no {self._what()} request arrived within {timeout} s")
        return self

    @property
    def caught(self) -> bool:
        return self._caught.is_set()

    def release(self, body: dict | None = None) -> None:
        """Send the response: as the broker built it, or ``body`` (an edited copy of ``.response``). An edited
        body that does not encode in the exchange's version is refused here (ValueError), and stays held."""
        if body is not None and self._encode is not None:
            try:
                self._encode(body)
            except Exception as exc:  # noqa: BLE001 - the codec's complaint, handed to the notebook
                raise ValueError(f"the edited response does not encode as v{self.api_version}: {exc}") from None
        self._decide(RELEASE, body)

    def drop(self) -> None:
        """Send nothing and close the connection (the client sees a disconnect)."""
        self._decide(DROP, None)

    def _decide(self, decision: str, body: dict | None) -> None:
        if not self.caught:
            raise RuntimeError(f"nothing is held yet: wait() for a {self._what()} request first")
        with self._lock:
            if self.decision is not None:
                raise RuntimeError(f"this exchange was already decided: {self.decision}")
            self.decision, self.edited = decision, body
            callback = self._callback
        if callback is not None:
            callback()

    # --- the broker's side --------------------------------------------------------------------------

    def matches(self, api_key: int, partitions: set[tuple[str, int | None]]) -> bool:
        if self.caught or (self.api_key is not None and api_key != self.api_key):
            return False
        return self.topic is None or any(t == self.topic for t, _ in partitions)

    def catch(self, request_frame: Any, response: dict, api_version: int,
              encode: Callable[[dict], bytes] | None = None) -> None:
        self.request, self.response, self.api_version, self._encode = request_frame, response, api_version, encode
        self._caught.set()

    def on_decided(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from the deciding thread) once released or dropped; now if already decided."""
        with self._lock:
            decided = self.decision is not None
            if not decided:
                self._callback = callback
        if decided:
            callback()

    def _what(self) -> str:
        return "matching" if self.api_key is None else api_spec(self.api_key).name

    def __repr__(self) -> str:
        state = {RELEASE: "released", DROP: "dropped"}.get(self.decision) if self.decision else ("held" if self.caught else "armed")
        return f"<Hold {self._what()}{' ' + self.topic if self.topic else ''}: {state}>"
