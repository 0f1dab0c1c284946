"""The group coordinator: classic groups (JoinGroup/SyncGroup, :mod:`.classic`), KIP-848 consumer groups
(ConsumerGroupHeartbeat, :mod:`.consumer`, :mod:`.assignors`) and the table of both (:mod:`.coordinator`)."""
from .classic import ClassicGroup, Event, JoinRequest, State, Waiter
from .consumer import ConsumerGroup
from .coordinator import GroupCoordinator, GroupSettings

__all__ = ["ClassicGroup", "ConsumerGroup", "Event", "GroupCoordinator", "GroupSettings", "JoinRequest", "State",
           "Waiter"]
