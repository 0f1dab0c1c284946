"""kafkalab's in-notebook Kafka broker: real clients connect, every frame lands in a journal.

Layout: :mod:`.runtime` (``Broker``), :mod:`.server` (the asyncio adapter: listeners and timers, with
:mod:`.client_connection` for each client's bytes and :mod:`.loop_thread` for the private loop; the only
asyncio users), :mod:`.dispatch` (a sans-IO connection), :mod:`.handlers` (one module per API, the registry
ApiVersions is built from), :mod:`.groups` (the group coordinator: classic and KIP-848 groups),
:mod:`.storage` (segments, partition logs, producer state, topics, committed offsets in
``__consumer_offsets``), :mod:`.journal`.
"""

def __getattr__(name: str):
    """``Broker`` is imported on first use, so the command line's other commands do not load the broker."""
    if name == "Broker":
        from .runtime import Broker

        return Broker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Broker"]
