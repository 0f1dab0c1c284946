"""A private asyncio event loop on a daemon thread, so brokers start the same way everywhere.

Owns: :class:`LoopThread`. A broker started from a script, a test or a running Jupyter kernel gets its own
loop (the kernel's is never touched); other threads run coroutines and plain functions on it and wait for
their results, which is how the broker's state, living on the loop's thread, is read and changed safely.
"""
from __future__ import annotations

import asyncio
import threading


class LoopThread:
    """A private asyncio event loop running on a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro, timeout: float | None = 30.0):
        """Run a coroutine on the loop and wait for its result from another thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn, *args, timeout: float | None = 30.0):
        """Run a plain function on the loop's thread (where the broker state lives) and return its result."""
        async def wrapper():
            return fn(*args)
        return self.run(wrapper(), timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()
