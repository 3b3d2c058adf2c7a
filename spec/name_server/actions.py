"""Name server: the actions: the requests name servers get, the events of their brokers' lives, and time."""

from __future__ import annotations

import attrs

from rocketspec.spec.name_server.state import CLUSTER, TICK_MS, TOPIC_CONFIGS, TopicConf, broker_addr


# ------------------------------------------------------------------------------------------------------ actions
@attrs.frozen
class RegisterBroker:
    """REGISTER_BROKER at name server ``server``: a broker's name, id, data version and (masters) topic configs
    (``addr`` None and ``topics`` None: the explorer's address of the broker and its configs at ``version``);
    ``filter_servers`` None is a null list; ``crc_ok`` False a body that does not match its bodyCrc32, ``parses``
    False one that does not decode."""

    name: str
    broker_id: int
    version: int
    server: int = 0
    addr: str | None = None
    cluster: str = CLUSTER
    topics: tuple[TopicConf, ...] | None = None
    ha_addr: str = ""
    filter_servers: tuple[str, ...] | None = ()
    crc_ok: bool = True
    parses: bool = True


@attrs.frozen
class UnregisterBroker:
    """UNREGISTER_BROKER (a broker shutting down)."""

    name: str
    broker_id: int
    server: int = 0
    addr: str | None = None
    cluster: str = CLUSTER


@attrs.frozen
class ChannelClosed:
    """The connection through which ``addr`` last registered with name server ``server`` closes."""

    addr: str
    server: int = 0


@attrs.frozen
class TimePasses:
    """Time passes without a request."""

    ms: int = TICK_MS


@attrs.frozen
class ScanNotActiveBrokers:
    """A name server's periodic scan for expired brokers."""

    server: int = 0


@attrs.frozen
class WritePerm:
    """WIPE_WRITE_PERM_OF_BROKER (``wipe``) or ADD_WRITE_PERM_OF_BROKER for a broker name."""

    name: str
    wipe: bool
    server: int = 0


@attrs.frozen
class DeleteTopic:
    """DELETE_TOPIC_IN_NAMESRV, with or without a cluster name (a None field is one the request leaves out)."""

    topic: str | None
    server: int = 0
    cluster: str | None = None


@attrs.frozen
class PutKV:
    """PUT_KV_CONFIG (a None field is one the request leaves out)."""

    namespace: str | None
    key: str | None
    value: str | None
    server: int = 0


@attrs.frozen
class DeleteKV:
    """DELETE_KV_CONFIG."""

    namespace: str | None
    key: str | None
    server: int = 0


@attrs.frozen
class QueryDataVersion:
    """QUERY_DATA_VERSION for a broker address and data version (``parses`` False: a body that does not decode)."""

    addr: str
    version: int
    server: int = 0
    parses: bool = True


@attrs.frozen
class UpdateConfig:
    """UPDATE_NAMESRV_CONFIG with these properties."""

    props: tuple[tuple[str, str], ...]
    server: int = 0


@attrs.frozen
class NamesrvStops:
    """A name server stops (its process ends)."""

    server: int = 0


@attrs.frozen
class NamesrvStarts:
    """A stopped name server starts again."""

    server: int = 0


@attrs.frozen
class BrokerStarts:
    """A broker of the cluster starts (from its disk, after a stop)."""

    name: str
    broker_id: int


@attrs.frozen
class BrokerStops:
    """A broker stops cleanly or crashes."""

    name: str
    broker_id: int
    crash: bool = False


@attrs.frozen
class TopicCreated:
    """A topic is created (or updated) on a master."""

    name: str
    conf: TopicConf


@attrs.frozen
class BrokerCutOff:
    """A broker loses (``cut``) or regains its way to one name server: its registrations there are lost."""

    name: str
    broker_id: int
    server: int
    cut: bool


Action = (RegisterBroker | UnregisterBroker | ChannelClosed | TimePasses | ScanNotActiveBrokers | WritePerm
          | DeleteTopic | PutKV | DeleteKV | QueryDataVersion | UpdateConfig | NamesrvStops | NamesrvStarts
          | BrokerStarts | BrokerStops | TopicCreated | BrokerCutOff)

# Requests: what a name server answers (the rest are events).
Request = (RegisterBroker | UnregisterBroker | WritePerm | DeleteTopic | PutKV | DeleteKV | QueryDataVersion
           | UpdateConfig)


def registration_addr(action: RegisterBroker | UnregisterBroker) -> str:
    return action.addr if action.addr is not None else broker_addr(action.name, action.broker_id)


def registration_topics(action: RegisterBroker) -> tuple[TopicConf, ...]:
    if action.topics is not None:
        return action.topics
    return tuple(TopicConf(t, n, n, p) for t, n, p in TOPIC_CONFIGS[action.version])
