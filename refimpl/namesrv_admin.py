"""The name server's admin requests (``DefaultRequestProcessor`` and ``KVConfigManager`` of 4.9.8).

- KV config: namespaced key/value pairs (``PUT_KV_CONFIG``, ``GET_KV_CONFIG``, ``DELETE_KV_CONFIG``,
  ``GET_KVLIST_BY_NAMESPACE``). The ``ORDER_TOPIC_CONFIG`` namespace is what ``mqadmin updateTopic -o true`` writes:
  every REGISTER_BROKER answer carries that namespace as a ``KVTable``, and brokers set their topics' order flag
  from it (``TopicConfigManager.updateOrderTopicConfig``). Kept in memory across the name server's restarts, as a
  real one keeps it in ``kvConfig.json`` (``KVConfigManager.load``).
- Topic lists: ``GET_ALL_TOPIC_LIST_FROM_NAMESERVER``, ``GET_TOPICS_BY_CLUSTER``, ``GET_SYSTEM_TOPIC_LIST_FROM_NS``,
  the unit-topic lists (``TopicList`` bodies) and ``DELETE_TOPIC_IN_NAMESRV`` (the route goes; brokers keep their
  config).
- ``WIPE_WRITE_PERM_OF_BROKER`` / ``ADD_WRITE_PERM_OF_BROKER``: a broker's queue data loses / regains write
  permission in every route (until its next registration with a changed data version).
- ``GET_NAMESRV_CONFIG`` / ``UPDATE_NAMESRV_CONFIG``: ``NamesrvConfig`` and ``NettyServerConfig`` as properties;
  ``orderMessageEnable`` is live (routes then carry ``orderTopicConf`` from the ORDER_TOPIC_CONFIG namespace), the
  others are reported back. ``configBlackList``, ``configStorePath``, ``kvConfigPath`` and ``rocketmqHome`` are
  always black-listed (``DefaultRequestProcessor.initConfigBlackList``), with the keys ``configBlackList`` names; a
  known key takes a value as ``MixAll.properties2Object`` reads its Java type (``Boolean.parseBoolean``, an integer
  only when ``Integer.parseInt`` reads it). An update lasts until the name server stops: a restarted one has the
  configuration it started with (the command line's, not the file ``Configuration.persist`` writes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rocketspec.refimpl.properties import parse_properties
from rocketspec.refimpl.remoting import Channel, RemotingCommand
from rocketspec.refimpl.route import dumps_java
from rocketspec.spec.java import parse_long
from rocketspec.spec.protocol import (
    NAMESPACE_ORDER_TOPIC_CONFIG,
    NAMESRV_CONFIG_ALWAYS_BLACK,
    NAMESRV_CONFIG_DEFAULTS,
    PERM_READ,
    PERM_WRITE,
    TOPIC_SYS_FLAG_UNIT,
    TOPIC_SYS_FLAG_UNIT_SUB,
    RequestCode,
    ResponseCode,
)

if TYPE_CHECKING:
    from rocketspec.refimpl.namesrv import NameServer


# NamesrvConfig + NettyServerConfig of 4.9.8 with their defaults (paths blank: no files here).
NAMESRV_DEFAULTS: dict[str, str] = dict(NAMESRV_CONFIG_DEFAULTS)
_FLAG_UNIT = TOPIC_SYS_FLAG_UNIT
_FLAG_UNIT_SUB = TOPIC_SYS_FLAG_UNIT_SUB


def _java(text: str | None) -> str:
    """A header field as Java's string concatenation prints it (a missing one is null)."""
    return "null" if text is None else text


def _java_value(default: str, old: str, text: str) -> str:
    """A property's value after ``MixAll.properties2Object`` sets it from ``text``: booleans by
    ``Boolean.parseBoolean`` (no trimming), integers only when ``Integer.parseInt`` reads them (else unchanged),
    strings as given; the field's type is its default's."""
    if default in ("true", "false"):
        return "true" if text.lower() == "true" else "false"
    if parse_long(default, 32) is not None:
        number = parse_long(text, 32)
        return old if number is None else str(number)
    return text


def kv_table_json(table: dict[str, str]) -> bytes:
    """A ``KVTable`` body: ``{"table":{key:value}}``."""
    return dumps_java({"table": dict(table)})


def topic_list_json(topics: list[str], broker_addr: str | None = None) -> bytes:
    """A ``TopicList`` body: ``{"topicList":[...]}`` plus ``brokerAddr`` when set (fastjson leaves nulls out)."""
    data: dict[str, Any] = {"topicList": list(dict.fromkeys(topics))}
    if broker_addr is not None:
        data["brokerAddr"] = broker_addr
    return dumps_java(data)


class KVConfigManager:
    """``KVConfigManager``: namespace → key → value. A namespace exists once a key was put into it, and stays (empty)
    after its last key is deleted, as in Java."""

    def __init__(self) -> None:
        self.table: dict[str, dict[str, str]] = {}

    def put(self, namespace: str, key: str, value: str) -> None:
        self.table.setdefault(namespace, {})[key] = value

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        kv = self.table.get(namespace)
        if kv is not None:
            kv.pop(key, None)

    def list_json(self, namespace: str) -> bytes | None:
        """``getKVListByNamespace``: the namespace as a KVTable body, None when it does not exist."""
        kv = self.table.get(namespace)
        return None if kv is None else kv_table_json(kv)

    def order_topic_body(self) -> bytes | None:
        """The REGISTER_BROKER answer body: the ORDER_TOPIC_CONFIG namespace (None when there is none)."""
        return self.list_json(NAMESPACE_ORDER_TOPIC_CONFIG)


class NamesrvAdmin:
    """The admin request handlers of one name server; ``handlers()`` is merged into its dispatch table."""

    def __init__(self, namesrv: NameServer) -> None:
        self.namesrv = namesrv
        self.kv = KVConfigManager()
        self.config: dict[str, str] = {}
        # What the name server was started with (a --namesrv-config file): kept across its restarts.
        self.start_settings: dict[str, str] = {}
        self.reset_config()

    def reset_config(self) -> None:
        """The configuration the name server starts with (its port; its start-up settings; the defaults otherwise)."""
        self.config = {**NAMESRV_DEFAULTS, **self.start_settings, "listenPort": self.namesrv.addr.rpartition(":")[2]}

    def configure(self, settings: Mapping[str, str]) -> None:
        """Start with ``settings`` (known property names, values as Java prints them): the configuration from now
        on and after every restart, as a 4.9.8 name server's ``-c`` file."""
        unknown = sorted(set(settings) - set(NAMESRV_DEFAULTS))
        if unknown:
            raise ValueError(f"not name server properties: {', '.join(unknown)}")
        self.start_settings = dict(settings)
        self.reset_config()

    @property
    def order_message_enable(self) -> bool:
        """``NamesrvConfig.orderMessageEnable``: routes carry the topic's ORDER_TOPIC_CONFIG entry."""
        return self.config["orderMessageEnable"] == "true"

    def handlers(self) -> dict[int, Any]:
        return {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: lambda r, c: self._unit_topics(r, lambda f: bool(f & _FLAG_UNIT)),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST:
                lambda r, c: self._unit_topics(r, lambda f: bool(f & _FLAG_UNIT_SUB)),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST:
                lambda r, c: self._unit_topics(r, lambda f: not f & _FLAG_UNIT and bool(f & _FLAG_UNIT_SUB)),
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: lambda r, c: self._write_perm(r, "wipeTopicCount", wipe=True),
            RequestCode.ADD_WRITE_PERM_OF_BROKER: lambda r, c: self._write_perm(r, "addTopicCount", wipe=False),
            RequestCode.GET_NAMESRV_CONFIG: self.get_config,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_config,
        }

    # KV config --------------------------------------------------------------------------------------------------
    def put_kv_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``putKVConfig``: a missing namespace or key is SYSTEM_ERROR "namespace or key is null"
        (``KVConfigManager.putKVConfig``'s own check: 4.9.8's decoder leaves missing fields null); a missing value
        stores null, which reads back as no item (the key disappears, the namespace exists)."""
        namespace = request.field("namespace")
        key = request.field("key")
        if namespace is None or key is None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark="namespace or key is null")
        value = request.field("value")
        if value is None:
            self.kv.put(namespace, key, "")
            self.kv.delete(namespace, key)
        else:
            self.kv.put(namespace, key, value)
        return request.response(ResponseCode.SUCCESS)

    def get_kv_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getKVConfig``: the value in the ``value`` header field, or QUERY_NOT_FOUND naming namespace and key."""
        namespace = request.field("namespace")
        key = request.field("key")
        # A missing field is null in 4.9.8: no item, the remark printing "null".
        value = None if namespace is None or key is None else self.kv.get(namespace, key)
        if value is None:
            return request.response(ResponseCode.QUERY_NOT_FOUND,
                                    remark=f"No config item, Namespace: {_java(namespace)} Key: {_java(key)}")
        return request.response(ResponseCode.SUCCESS, {"value": value})

    def delete_kv_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``deleteKVConfig``: SUCCESS whether or not the key existed (a missing field: nothing to delete)."""
        namespace = request.field("namespace")
        key = request.field("key")
        if namespace is not None and key is not None:
            self.kv.delete(namespace, key)
        return request.response(ResponseCode.SUCCESS)

    def get_kv_list_by_namespace(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getKVListByNamespace``: the namespace's KVTable, or QUERY_NOT_FOUND when the namespace is unknown."""
        namespace = request.field("namespace")
        body = None if namespace is None else self.kv.list_json(namespace)
        if body is None:
            return request.response(ResponseCode.QUERY_NOT_FOUND,
                                    remark=f"No config item, Namespace: {_java(namespace)}")
        return request.response(ResponseCode.SUCCESS, body=body)

    # topics -----------------------------------------------------------------------------------------------------
    def get_all_topic_list(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getAllTopicListFromNameserver``: every topic with a route (``topicQueueTable`` keys)."""
        return request.response(ResponseCode.SUCCESS, body=topic_list_json(list(self.namesrv.topic_queue_table)))

    def delete_topic(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``deleteTopicInNamesrv``: drop the topic's route; with ``clusterName`` only that cluster's brokers' queue
        data (the topic goes when none is left). Brokers keep the topic config: their next registration with a new
        data version brings the route back, as in Java."""
        topic = request.field("topic")
        if topic is None:  # 4.9.8 removes the null key: nothing
            return request.response(ResponseCode.SUCCESS)
        cluster = request.field("clusterName")
        table = self.namesrv.topic_queue_table
        if not cluster:
            table.pop(topic, None)
            return request.response(ResponseCode.SUCCESS)
        names = self.namesrv.cluster_addr_table.get(cluster)
        queue_datas = table.get(topic)
        if names and queue_datas is not None:
            for name in names:
                queue_datas.pop(name, None)
            if not queue_datas:
                del table[topic]
        return request.response(ResponseCode.SUCCESS)

    def get_topics_by_cluster(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getTopicsByCluster``: topics with queues on a broker of the cluster (an unknown cluster: an empty list,
        Java's NullPointerException being logged and swallowed)."""
        cluster = request.field("cluster")  # missing: null, no such cluster
        names = (None if cluster is None else self.namesrv.cluster_addr_table.get(cluster)) or set()
        topics = [topic for name in sorted(names)
                  for topic, queue_datas in self.namesrv.topic_queue_table.items() if name in queue_datas]
        return request.response(ResponseCode.SUCCESS, body=topic_list_json(topics))

    def get_system_topic_list(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getSystemTopicList``: every cluster name and broker name (the topics brokers create for themselves), and
        in ``brokerAddr`` the first address of the first broker."""
        topics: list[str] = []
        for cluster, names in self.namesrv.cluster_addr_table.items():
            topics.append(cluster)
            topics.extend(sorted(names))
        broker_addr = None
        for broker_data in self.namesrv.broker_addr_table.values():
            if broker_data.broker_addrs:
                broker_addr = broker_data.broker_addrs[min(broker_data.broker_addrs)]
                break
        return request.response(ResponseCode.SUCCESS, body=topic_list_json(topics, broker_addr))

    def _unit_topics(self, request: RemotingCommand, pick: Any) -> RemotingCommand:
        """``getUnitTopics`` and friends: topics whose first queue data's sys flag passes ``pick``."""
        topics = [topic for topic, queue_datas in self.namesrv.topic_queue_table.items()
                  if queue_datas and pick(next(iter(queue_datas.values())).topic_sys_flag)]
        return request.response(ResponseCode.SUCCESS, body=topic_list_json(topics))

    def _write_perm(self, request: RemotingCommand, count_field: str, *, wipe: bool) -> RemotingCommand:
        """``wipeWritePermOfBroker`` / ``addWritePermOfBroker``: every queue data of the broker loses the write bit
        (or becomes read-write); the header field counts the topics touched."""
        broker_name = request.field("brokerName")  # missing: null, a broker with no queues
        count = 0
        for queue_datas in self.namesrv.topic_queue_table.values():
            queue_data = queue_datas.get(broker_name)  # type: ignore[arg-type]  # null: no entry, as HashMap.get(null)
            if queue_data is None:
                continue
            queue_data.perm = queue_data.perm & ~PERM_WRITE if wipe else PERM_READ | PERM_WRITE
            count += 1
        return request.response(ResponseCode.SUCCESS, {count_field: count})

    # configuration ----------------------------------------------------------------------------------------------
    def get_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getConfig``: every property as ``key=value`` lines."""
        body = "".join(f"{key}={value}\n" for key, value in self.config.items()).encode("utf-8")
        return request.response(ResponseCode.SUCCESS, body=body)

    def update_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``updateConfig``: black-listed keys are NO_PERMISSION; known keys take the new value, unknown ones are
        ignored (``Configuration.update`` merges only existing keys)."""
        if request.body is None:
            return request.response(ResponseCode.SUCCESS)
        # new String(body, UTF_8): undecodable bytes become U+FFFD, as in Java.
        try:
            props = parse_properties(request.body.decode("utf-8", errors="replace"))
        except ValueError:  # a malformed \uxxxx escape: string2Properties answers null
            return request.response(ResponseCode.SYSTEM_ERROR, remark="string2Properties error")
        black = set(NAMESRV_CONFIG_ALWAYS_BLACK) | {k for k in self.config["configBlackList"].split(";") if k}
        if black & set(props):
            return request.response(ResponseCode.NO_PERMISSION, remark="Can not update config in black list.")
        for key, value in props.items():
            if key in self.config:
                self.config[key] = _java_value(NAMESRV_DEFAULTS[key], self.config[key], value)
        return request.response(ResponseCode.SUCCESS)
