"""The test-double facade: a name server, brokers and clients on one runtime, with fault injection.

```python
with Cluster(brokers=2, clock="simulated", seed=7) as cluster:
    cluster.create_topic("TopicTest", queues=4)
    producer = cluster.producer("PG")
    producer.send(Message("TopicTest", b"hello", tags="A"))
    consumer = cluster.push_consumer("CG", {"TopicTest": "*"}, listener)
    cluster.faults.fail("broker-a", "SEND_MESSAGE", code="SYSTEM_ERROR", times=1)
    cluster.run_until_idle()
```

Brokers are named ``broker-a``, ``broker-b``, … (or ``broker_names=[...]``, e.g. ``room1@broker-a`` for the
MACHINE_ROOM strategy); every client gets its own client instance (client id
``127.0.0.1@<group>-<n>``). Options of producers and consumers are the fields of ``ProducerConfig`` /
``ConsumerConfig`` passed as keyword arguments.

``acl=PATH`` turns plain ACL on at every broker (``aclEnable`` with that ``plain_acl.yml``, ``refimpl/acl.py``); the
clients then sign with ``access_key=`` / ``secret_key=`` (``ClientConfig``), as ``AclClientRPCHook`` does.

``wire_codec="json"`` (or ``"rocketmq"``, the binary header) passes every command of the in-process network through
the frame codec as it arrives, so components see only what a socket carries (strings for header fields, no body
for an empty one), as under ``rocketspec serve``; the stateful machines run with it.

``name_servers=2`` starts more name servers (``namesrvs``; nodes ``namesrv``, ``namesrv-2``, ... on the next ports):
brokers register with every one, clients dial the first; ``stop_namesrv(i)`` / ``start_namesrv(i)`` restart one.
``slaves=1`` gives every master a slave (broker id 1, under the master's name, ``SLAVE_PORT_OFFSET`` ports up),
started after its master so that the name servers answer it its master's address; ``stop_slave`` / ``start_slave``.

Keyword options of ``BrokerConfig`` (``message_delay_level=``, ``enable_property_filter=``, ...) apply to every
broker; ``broker_settings=[{...}, {...}]`` gives each broker its own on top of them, one mapping per broker in order
(as each RocketMQ broker reads its own ``broker.conf``). The run has one delay table, so ``message_delay_level``
may differ between brokers only by not being given.

``sinks=[...]`` hands the run's events to what the caller passes (``EventSink``: a trace recorder of
``rocketspec.traces``, attached before anything starts and closed with the cluster); ``add_sink`` attaches one later.
"""

from __future__ import annotations

import enum
import string
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs

from rocketspec.refimpl.acl_config import AclConfig, load_acl_file
from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.broker.config import BrokerConfig, parse_message_delay_level
from rocketspec.refimpl.broker.topics import validate_topic
from rocketspec.refimpl.client.config import ClientConfig, ProducerConfig
from rocketspec.refimpl.client.consumer_config import ConsumerConfig
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.lite_pull_consumer import LitePullConsumer
from rocketspec.refimpl.client.producer import Producer
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.client.transaction import TransactionProducer
from rocketspec.refimpl.events import BrokerRestart, Event, EventLog, EventSink
from rocketspec.refimpl.faults import Faults
from rocketspec.refimpl.frame import WIRE_CODECS, round_trip
from rocketspec.refimpl.message import MessageExt, decode_stored_message
from rocketspec.refimpl.namesrv import NAMESRV_NODE, NameServer
from rocketspec.refimpl.remoting import Network
from rocketspec.refimpl.runtime import RealRuntime, Runtime, SimulatedRuntime
from rocketspec.refimpl.store import Disk, FileDisk, MemoryDisk
from rocketspec.spec.protocol import (
    DEFAULT_BROKER_PORT,
    DEFAULT_NAMESRV_PORT,
    DEFAULT_PERM,
    DELAY_LEVEL_MILLIS,
    LITE_PULL_BATCH_SIZE,
    LITE_PULL_BROKER_SUSPEND_MAX_TIME_MS,
    ConsumeFromWhere,
    MessageModel,
    split_addr,
)
from rocketspec.spec.queues import MessageQueue

_CLOCKS = ("simulated", "real")
# A slave listens this many ports above its master per broker id (clear of the master's HA and VIP ports).
SLAVE_PORT_OFFSET = 1000


def namesrv_node(index: int) -> str:
    """The node of name server ``index``: ``namesrv``, then ``namesrv-2``, ``namesrv-3``, ..."""
    return NAMESRV_NODE if index == 0 else f"{NAMESRV_NODE}-{index + 1}"


def broker_name(index: int) -> str:
    """``broker-a`` for 0, ``broker-b`` for 1, …, ``broker-aa`` after ``broker-z``."""
    letters = string.ascii_lowercase
    name = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        name = letters[rem] + name
    return f"broker-{name}"


def _split_options(cls: type, options: Mapping[str, Any], what: str) -> dict[str, Any]:
    names = {f.name for f in attrs.fields(cls)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise TypeError(f"unknown {what} option(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    return dict(options)


def _enum_option(options: dict[str, Any], name: str, enum_type: type[enum.Enum]) -> None:
    value = options.get(name)
    if isinstance(value, str):
        try:
            options[name] = enum_type[value.upper()]
        except KeyError:
            choices = ", ".join(m.name for m in enum_type)
            raise ValueError(f"{name} must be one of {choices}, not {value!r}") from None


def delay_table(options: Mapping[str, Any]) -> tuple[int, ...]:
    """The delay table (ms per level) of a broker with these ``BrokerConfig`` options."""
    levels = options.get("message_delay_level")
    return DELAY_LEVEL_MILLIS if levels is None else parse_message_delay_level(levels)


def _per_broker(brokers: int, shared: Mapping[str, Any],
                settings: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Each broker's own ``BrokerConfig`` options (``broker_settings``), checked: one mapping per broker, known
    options only, and no second delay table (the run's events are judged by one)."""
    if settings is None:
        return [{} for _ in range(brokers)]
    if isinstance(settings, Mapping) or len(settings) != brokers:
        raise ValueError(f"broker_settings must hold one mapping per broker ({brokers})")
    try:
        own = [_split_options(BrokerConfig, dict(options), "broker") for options in settings]
    except TypeError as error:  # (as keyword arguments they would be a TypeError; here they are data)
        raise ValueError(f"broker_settings: {error}") from None
    for fixed in ("broker_name", "broker_id", "addr"):
        if any(fixed in options for options in own):
            raise ValueError(f"broker_settings cannot set {fixed}: the cluster names and addresses its brokers")
    if len({delay_table({**shared, **options}) for options in own}) > 1:
        raise ValueError("broker_settings give the brokers different message_delay_level tables; a run has one "
                         "(its events are judged by it): give every broker the same")
    return own


class Cluster:
    """A name server and ``brokers`` brokers, in-process, on a simulated or real clock."""

    def __init__(
        self,
        brokers: int = 1,
        *,
        clock: str = "simulated",
        seed: int = 0,
        latency_ms: int = 1,
        data_dir: str | Path | None = None,
        flush: str = "async",
        keep_events: bool | None = None,
        sinks: Sequence[EventSink] = (),
        namesrv_addr: str | None = None,
        broker_addrs: Sequence[str] | None = None,
        acl: str | Path | AclConfig | None = None,
        runtime: Runtime | None = None,
        wire_codec: str | None = None,
        broker_names: Sequence[str] | None = None,
        name_servers: int = 1,
        slaves: int = 0,
        broker_settings: Sequence[Mapping[str, Any]] | None = None,
        **broker_options: Any,
    ) -> None:
        if not isinstance(brokers, int) or brokers < 1:
            raise ValueError("brokers must be a positive integer")
        if not isinstance(name_servers, int) or name_servers < 1:
            raise ValueError("name_servers must be a positive integer")
        if not isinstance(slaves, int) or slaves < 0:
            raise ValueError("slaves must be a non-negative integer")
        if clock not in _CLOCKS:
            raise ValueError(f"clock must be one of {', '.join(_CLOCKS)}, not {clock!r}")
        if flush not in ("async", "sync"):
            raise ValueError("flush must be 'async' or 'sync'")
        if broker_addrs is not None and len(broker_addrs) != brokers:
            raise ValueError(f"broker_addrs has {len(broker_addrs)} addresses for {brokers} brokers")
        if broker_names is not None and (len(broker_names) != brokers or len(set(broker_names)) != brokers):
            raise ValueError(f"broker_names must name {brokers} distinct brokers: {list(broker_names)}")
        _split_options(BrokerConfig, broker_options, "broker")
        self._broker_settings = _per_broker(brokers, broker_options, broker_settings)
        # Plain ACL on every broker (aclEnable with this plain_acl.yml); a bad file fails here, before anything runs.
        self.acl: AclConfig | None = load_acl_file(acl) if isinstance(acl, (str, Path)) else acl
        # Every broker has the same delay table (_per_broker), so the run has one; a recorded trace carries it when
        # it is not the default (the checkers judge retry delays by it).
        self.delay_level_millis: tuple[int, ...] = delay_table({**broker_options, **self._broker_settings[0]})
        # A runtime passed in (a served cluster's, on its socket loop) must keep the clock asked for.
        if runtime is not None and runtime.simulated != (clock == "simulated"):
            raise ValueError(f"the runtime given is not on the {clock} clock")
        self.runtime: Runtime = runtime if runtime is not None else \
            SimulatedRuntime(seed) if clock == "simulated" else RealRuntime(seed)
        self.seed = seed
        if keep_events is None:
            keep_events = not sinks  # a run whose events go somewhere does not also keep them in memory
        self.events = EventLog(self.runtime.now_ms, keep=keep_events)
        self.sinks: list[EventSink] = []
        for sink in sinks:
            self.add_sink(sink)
        if wire_codec not in (None, *WIRE_CODECS):
            raise ValueError(f"wire_codec must be one of {', '.join(WIRE_CODECS)}, not {wire_codec!r}")
        self.network = Network(self.runtime, self.events, latency_ms=latency_ms if clock == "simulated" else 0,
                               wire=None if wire_codec is None else partial(round_trip, WIRE_CODECS[wire_codec]))
        # The addresses brokers register and clients dial; a TCP server binds real ports and passes them in.
        self.namesrv_addr = namesrv_addr or f"127.0.0.1:{DEFAULT_NAMESRV_PORT}"
        self._broker_addrs = list(broker_addrs) if broker_addrs is not None else None
        self.namesrv = NameServer(self.runtime, self.network, self.events, self.namesrv_addr)
        # More name servers listen on the next ports (nodes namesrv-2, ...): brokers register with every one (their
        # namesrvAddr is the list joined by ";"), clients dial the first.
        host, port = split_addr(self.namesrv_addr)
        self.namesrvs: list[NameServer] = [self.namesrv] + [
            NameServer(self.runtime, self.network, self.events, f"{host}:{port + i}", namesrv_node(i))
            for i in range(1, name_servers)]
        self.namesrv_addrs: list[str] = [n.addr for n in self.namesrvs]
        # Slave brokers: ids 1..slaves under each master's name (``slaves[(name, id)]``), started after the masters.
        self.slaves: dict[tuple[str, int], Broker] = {}
        self._slave_disks: dict[tuple[str, int], Disk] = {}
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._flush = flush
        self._broker_options = broker_options
        self._disks: dict[str, Disk] = {}
        self.brokers: dict[str, Broker] = {}
        self._clients: list[ClientInstance] = []
        self._instance_counter: dict[str, int] = {}
        self._closed = False
        for namesrv in self.namesrvs:
            self.runtime.submit(namesrv.start)
        for i in range(brokers):
            name = broker_names[i] if broker_names is not None else broker_name(i)
            disk: Disk = FileDisk(self._data_dir / name) if self._data_dir is not None else MemoryDisk()
            self._disks[name] = disk
            self.runtime.submit(partial(self._start_broker, name))
        for name in list(self._disks):
            for broker_id in range(1, slaves + 1):
                self._slave_disks[(name, broker_id)] = (
                    FileDisk(self._data_dir / f"{name}-{broker_id}") if self._data_dir is not None else MemoryDisk())
                self.runtime.submit(partial(self._start_slave, name, broker_id))
        self.runtime.submit(lambda: None)

    # ------------------------------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Shut every client and server down cleanly (idempotent)."""
        if self._closed:
            return
        self._closed = True
        # The sinks end with the run (a trace CUT unless the caller ended it): the shutdown below is not part of it.
        sinks = list(self.sinks)
        self.runtime.submit(lambda: [sink.close() for sink in sinks])

        def stop_all() -> None:
            for instance in self._clients:
                instance.shutdown()
            for broker in [*self.brokers.values(), *self.slaves.values()]:
                broker.shutdown()
            for namesrv in self.namesrvs:
                namesrv.shutdown()

        self.runtime.submit(stop_all)
        self.runtime.close()

    def add_sink(self, sink: EventSink) -> EventSink:
        """Hand the run's events to ``sink`` from now on (it is closed with the cluster)."""
        self.runtime.submit(lambda: sink.attach(self.events, self.delay_level_millis))
        self.sinks.append(sink)
        return sink

    @property
    def faults(self) -> Faults:
        """Fault injection by node (``broker-a``, ``namesrv``, a client id), request code and client."""
        return self.network.faults

    @property
    def broker_names(self) -> list[str]:
        return list(self.brokers)

    def now_ms(self) -> int:
        return self.runtime.now_ms()

    def run_until_idle(self, timeout_ms: int | None = None) -> int:
        """Run until no request, delivery, delayed message, transaction check or unconsumed message is pending.

        Simulated: returns the virtual milliseconds it took (default limit one simulated day). Real: polls (default
        limit 60 s). Raises ``NotIdle`` when the limit is reached first.
        """
        if timeout_ms is None:
            return self.runtime.run_until_idle()
        return self.runtime.run_until_idle(timeout_ms)

    def advance(self, ms: int) -> None:
        """Let ``ms`` of time pass (simulated: instantly; real: sleeping)."""
        if isinstance(self.runtime, SimulatedRuntime):
            self.runtime.advance(ms)
        else:
            time.sleep(ms / 1000)

    # ------------------------------------------------------------------------------------------------- brokers
    def _broker_config(self, name: str, index: int) -> BrokerConfig:
        options = {"flush": self._flush, **self._broker_options, **self._broker_settings[index]}
        return BrokerConfig(
            broker_name=name,
            addr=self._broker_addrs[index] if self._broker_addrs else f"127.0.0.1:{DEFAULT_BROKER_PORT + 10 * index}",
            **options,
        )

    def _start_broker(self, name: str) -> Broker:
        index = list(self._disks).index(name)
        broker = Broker(self._broker_config(name, index), self.runtime, self.network, self.events,
                        ";".join(self.namesrv_addrs), disk=self._disks[name], acl=self.acl)
        broker.start()
        self.brokers[name] = broker
        return broker

    def _start_slave(self, name: str, broker_id: int) -> Broker:
        """A slave (``brokerId`` > 0) of ``name``: the master's settings, an address ``SLAVE_PORT_OFFSET`` ports up
        per id; it registers with the name servers after its master, which answer it the master's address."""
        config = self._broker_config(name, list(self._disks).index(name))
        host, port = split_addr(config.addr)
        config = attrs.evolve(config, broker_id=broker_id, addr=f"{host}:{port + SLAVE_PORT_OFFSET * broker_id}")
        broker = Broker(config, self.runtime, self.network, self.events, ";".join(self.namesrv_addrs),
                        disk=self._slave_disks[(name, broker_id)], acl=self.acl)
        broker.start()
        self.slaves[(name, broker_id)] = broker
        return broker

    def slave(self, name: str, broker_id: int = 1) -> Broker:
        try:
            return self.slaves[(name, broker_id)]
        except KeyError:
            raise KeyError(f"no slave {broker_id} of {name!r} running") from None

    def stop_slave(self, name: str, broker_id: int = 1, *, crash: bool = False) -> None:
        """Stop a slave cleanly (it unregisters) or by a crash (its connections just close)."""
        slave = self.slave(name, broker_id)

        def stop() -> None:
            if crash:
                slave.crash()
            else:
                slave.shutdown()
            del self.slaves[(name, broker_id)]

        self.runtime.submit(stop)

    def start_slave(self, name: str, broker_id: int = 1) -> Broker:
        """Start a stopped slave from its disk."""
        if (name, broker_id) in self.slaves:
            raise ValueError(f"slave {broker_id} of {name} is running")
        if (name, broker_id) not in self._slave_disks:
            raise KeyError(f"no slave {broker_id} of {name!r}")
        return self.runtime.submit(lambda: self._start_slave(name, broker_id))

    def stop_namesrv(self, index: int = 0) -> None:
        """Stop name server ``index``: its connections close and its route tables are gone (the KV config stays)."""
        self.runtime.submit(self.namesrvs[index].shutdown)

    def start_namesrv(self, index: int = 0) -> None:
        """Start a stopped name server again: brokers register with it at their next period."""
        self.runtime.submit(self.namesrvs[index].start)

    def broker(self, name: str) -> Broker:
        try:
            return self.brokers[name]
        except KeyError:
            raise KeyError(f"no broker {name!r}; brokers: {', '.join(self._disks)}") from None

    def stop_broker(self, name: str, *, crash: bool = False) -> None:
        """Stop a broker: cleanly (everything persisted) or by a crash (unflushed data lost in memory; on a
        ``data_dir`` a process crash, which keeps what was written)."""
        broker = self.broker(name)

        def stop() -> None:
            if crash:
                broker.crash()
            else:
                broker.shutdown()
            del self.brokers[name]

        self.runtime.submit(stop)

    def start_broker(self, name: str) -> Broker:
        """Start a stopped broker from its disk (recovering the store, topics, offsets)."""
        if name in self.brokers:
            raise ValueError(f"{name} is running")
        if name not in self._disks:
            raise KeyError(f"no broker {name!r}")
        return self.runtime.submit(lambda: self._start_broker(name))

    def restart_broker(self, name: str, *, crash: bool = False) -> Broker:
        self.stop_broker(name, crash=crash)
        broker = self.start_broker(name)
        self.runtime.submit(lambda: self.events.emit(BrokerRestart(node=name, broker=name, crashed=crash)))
        return broker

    def create_topic(
        self,
        topic: str,
        queues: int = 4,
        *,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int = DEFAULT_PERM,
        brokers: Iterable[str] | None = None,
        order: bool = False,
    ) -> None:
        """Create (or update) a topic on every broker (or the named ones) and register the routes now."""
        if not topic or not isinstance(topic, str):
            raise ValueError("topic must be a non-empty string")
        problem = validate_topic(topic)
        if problem is not None:
            raise ValueError(f"{problem}: {topic!r}")
        if queues < 1:
            raise ValueError("queues must be >= 1")
        names = list(brokers) if brokers is not None else list(self.brokers)
        targets = [self.broker(n) for n in names]

        def create() -> None:
            for broker in targets:
                broker.create_topic(topic, read_queues or queues, write_queues or queues, perm, order)
                broker.register_to_namesrv()

        self.runtime.submit(create)
        self._settle()

    def delete_old_data(self, name: str, segments: int = 1) -> int:
        """Delete the ``segments`` oldest commit-log segments of a broker: consumers behind must correct offsets."""
        broker = self.broker(name)
        return self.runtime.submit(lambda: broker.store.delete_oldest_segments(segments))

    # ------------------------------------------------------------------------------------------------- clients
    def _instance(self, prefix: str, client_options: Mapping[str, Any]) -> ClientInstance:
        n = self._instance_counter.get(prefix, 0) + 1
        self._instance_counter[prefix] = n
        options = dict(client_options)
        options.setdefault("instance_name", f"{prefix}-{n}")
        config = ClientConfig(**options)
        instance = ClientInstance(self.runtime, self.network, self.events, self.namesrv_addr,
                                  f"{config.client_ip}@{config.instance_name}", config)
        self._clients.append(instance)
        return instance

    @staticmethod
    def _pop_client_options(options: dict[str, Any]) -> dict[str, Any]:
        names = {f.name for f in attrs.fields(ClientConfig)}
        return {k: options.pop(k) for k in list(options) if k in names}

    def producer(self, group: str, **options: Any) -> Producer:
        """A started producer of ``group`` (options: ``ProducerConfig`` and ``ClientConfig`` fields)."""
        client_options = self._pop_client_options(options)
        _split_options(ProducerConfig, options, "producer")
        instance = self._instance(group, client_options)
        producer = Producer(instance, ProducerConfig(group=group, **options))
        self.runtime.submit(producer.start)
        self._settle()
        return producer

    def transaction_producer(
        self,
        group: str,
        executor: Callable[[Any, Any], Any],
        checker: Callable[[MessageExt], Any],
        **options: Any,
    ) -> TransactionProducer:
        """A started transactional producer: ``executor(msg, arg)`` runs the local transaction, ``checker(msg)``
        answers the broker's check-back; both return a ``TransactionState``."""
        client_options = self._pop_client_options(options)
        _split_options(ProducerConfig, options, "producer")
        instance = self._instance(group, client_options)
        producer = TransactionProducer(instance, ProducerConfig(group=group, **options), executor, checker)
        self.runtime.submit(producer.start)
        self._settle()
        return producer

    def _consumer_config(self, group: str, options: dict[str, Any]) -> ConsumerConfig:
        _split_options(ConsumerConfig, options, "consumer")
        _enum_option(options, "message_model", MessageModel)
        _enum_option(options, "consume_from_where", ConsumeFromWhere)
        return ConsumerConfig(group=group, **options)

    def push_consumer(
        self,
        group: str,
        subscriptions: Mapping[str, str] | str,
        listener: Callable[[list[MessageExt]], Any],
        **options: Any,
    ) -> PushConsumer:
        """A started push consumer; ``subscriptions`` maps topics to tag expressions (or is one topic name)."""
        subs = {subscriptions: "*"} if isinstance(subscriptions, str) else dict(subscriptions)
        if not subs:
            raise ValueError("a push consumer needs at least one subscription")
        client_options = self._pop_client_options(options)
        config = self._consumer_config(group, options)
        instance = self._instance(group, client_options)
        consumer = PushConsumer(instance, config, listener)
        for topic, expression in subs.items():
            consumer.subscribe(topic, expression)
        self.runtime.submit(consumer.start)
        self._settle()
        return consumer

    def lite_pull_consumer(
        self,
        group: str,
        subscriptions: Mapping[str, str] | str | None = None,
        *,
        queues: Iterable[MessageQueue] | None = None,
        **options: Any,
    ) -> LitePullConsumer:
        """A started lite pull consumer, subscribed (rebalanced) or assigned to ``queues``."""
        if (subscriptions is None) == (queues is None):
            raise ValueError("give either subscriptions or queues")
        client_options = self._pop_client_options(options)
        # DefaultLitePullConsumer's own defaults, where they are not DefaultMQPushConsumer's (ConsumerConfig's).
        options.setdefault("pull_batch_size", LITE_PULL_BATCH_SIZE)
        options.setdefault("broker_suspend_max_time_ms", LITE_PULL_BROKER_SUSPEND_MAX_TIME_MS)
        config = self._consumer_config(group, options)
        instance = self._instance(group, client_options)
        consumer = LitePullConsumer(instance, config)
        if subscriptions is not None:
            subs = {subscriptions: "*"} if isinstance(subscriptions, str) else dict(subscriptions)
            for topic, expression in subs.items():
                consumer.subscribe(topic, expression)
        else:
            consumer.assign(list(queues or ()))
        self.runtime.submit(consumer.start)
        self._settle()
        return consumer

    def crash_client(self, client: Producer | TransactionProducer | PushConsumer | LitePullConsumer) -> None:
        """Kill a client's process: no offsets persisted, nothing unregistered; brokers see its connections close."""
        self.runtime.submit(client.instance.crash)

    def _settle(self) -> None:
        # Let the start-up requests (routes, heartbeats, first rebalance) go out before returning to the caller.
        if isinstance(self.runtime, SimulatedRuntime):
            self.runtime.advance(10 * max(1, self.network.latency_ms))

    # ------------------------------------------------------------------------------------------------- inspection
    def messages(self, topic: str) -> list[MessageExt]:
        """Every message currently stored in ``topic``'s queues, by broker, queue and offset."""

        def collect() -> list[MessageExt]:
            out: list[MessageExt] = []
            for name, broker in self.brokers.items():
                store = broker.store
                for qid in store.queue_ids(topic):
                    lo, hi = store.min_offset(topic, qid), store.max_offset(topic, qid)
                    for _qo, cl_offset, _size, _tags in store.queue_entries(topic, qid, lo, hi - lo):
                        raw = store.look_message_bytes(cl_offset)
                        if raw is not None:
                            out.append(decode_stored_message(raw, 0, broker_name=name)[0])
            return out

        return self.runtime.submit(collect)

    def committed_offsets(self, group: str, topic: str) -> dict[MessageQueue, int]:
        """The offsets ``group`` has committed on the brokers for ``topic``."""

        def collect() -> dict[MessageQueue, int]:
            out: dict[MessageQueue, int] = {}
            for name, broker in self.brokers.items():
                for qid, offset in broker.consumer_offsets.offsets(group, topic).items():
                    out[MessageQueue(topic, name, qid)] = offset
            return out

        return self.runtime.submit(collect)

    def events_of(self, kind: type[Event]) -> list[Any]:
        return self.events.of(kind)
