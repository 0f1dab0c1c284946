"""The group coordinator: classic groups (JoinGroup/SyncGroup, :mod:`.classic`), KIP-848 consumer groups
(ConsumerGroupHeartbeat, :mod:`.consumer`, :mod:`.assignors`) and the table of both (:mod:`.coordinator`)."""
from .classic import ClassicGroup
from .classic_members import JoinRequest, Waiter
from .classic_states import Event, State
from .consumer import ConsumerGroup
from .coordinator import GroupCoordinator, GroupSettings

__all__ = ["ClassicGroup", "ConsumerGroup", "Event", "GroupCoordinator", "GroupSettings", "JoinRequest", "State",
           "Waiter"]
