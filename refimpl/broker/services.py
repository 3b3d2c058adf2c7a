"""What a request processor may use of the broker that calls it: a narrow, structural interface.

The broker (``refimpl.broker.broker.Broker``, 4.9.8's ``BrokerController``) builds its processors and hands each
itself; a processor sees it only as :class:`BrokerServices`: the broker's identity and configuration, its clock and
event log, its store and tables, the services other processors run (the scheduled-message and transaction services,
the send processor), and the few broker-level operations a processor starts (store a message, register with the name
servers). A processor therefore depends on this module, never on the broker's module, and a test can hand a
processor any object with these members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the processors and services below each take a BrokerServices: types only, no import at run time
    from rocketspec.refimpl.broker.clients import ConsumerManager, ProducerManager
    from rocketspec.refimpl.broker.config import BrokerConfig
    from rocketspec.refimpl.broker.filter import ConsumerFilterManager
    from rocketspec.refimpl.broker.groups import SubscriptionGroupManager
    from rocketspec.refimpl.broker.offsets import ConsumerOffsetManager
    from rocketspec.refimpl.broker.schedule import ScheduleService
    from rocketspec.refimpl.broker.send import SendMessageProcessor
    from rocketspec.refimpl.broker.stats import BrokerStats
    from rocketspec.refimpl.broker.topics import TopicConfigManager
    from rocketspec.refimpl.broker.transaction import TransactionService
    from rocketspec.refimpl.disk import Disk
    from rocketspec.refimpl.events import EventLog
    from rocketspec.refimpl.index import IndexService
    from rocketspec.refimpl.remoting import RemotingCommand
    from rocketspec.refimpl.runtime import Future, Runtime
    from rocketspec.refimpl.store import MessageStore, MessageToStore, PutResult


class BrokerServices(Protocol):
    """The members of the broker its request processors and services use (``BrokerController``'s getters)."""

    # identity and configuration
    name: str
    addr: str
    namesrv_addr: str | None
    config: BrokerConfig
    # clock, events, files
    runtime: Runtime
    events: EventLog
    disk: Disk
    # the store and the broker's tables
    store: MessageStore
    index: IndexService
    topics: TopicConfigManager
    subscription_groups: SubscriptionGroupManager
    consumer_offsets: ConsumerOffsetManager
    consumers: ConsumerManager
    producers: ProducerManager
    filters: ConsumerFilterManager
    stats: BrokerStats
    # the services and processors others call
    schedule: ScheduleService
    transactions: TransactionService
    sender: SendMessageProcessor

    def is_master(self) -> bool: ...

    def is_writeable(self) -> bool: ...

    def put_message(self, msg: MessageToStore) -> PutResult: ...

    def put_messages(self, msgs: list[MessageToStore]) -> PutResult: ...

    def register_to_namesrv(self, *, oneway: bool = False, check_order_config: bool = True,
                            wrapper: dict[str, Any] | None = None) -> list[Future[RemotingCommand]]: ...


__all__ = ["BrokerServices"]
