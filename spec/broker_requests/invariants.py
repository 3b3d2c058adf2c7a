"""Broker requests: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

import attrs

from rocketspec.spec.broker_requests.actions import (
    GROUP,
    MODEL_REQUESTED_QUEUES,
    TOPIC,
    Action,
    CommitOffset,
    ConnectionClosed,
    ConsumedBy,
    ConsumerConnections,
    ConsumerList,
    ConsumeStats,
    CorrectionOffset,
    CreateGroup,
    CreateTopic,
    DeleteGroup,
    DeleteTopic,
    GetBrokerConfig,
    GetGroups,
    GetSystemTopics,
    GetTopicConfig,
    GetTopicStats,
    Heartbeat,
    LockBatch,
    Maintenance,
    Malformed,
    OrderTopicConfig,
    ProducerInfo,
    QueryConsumeQueue,
    QueryMessage,
    QueryOffset,
    ResumeHalf,
    RuntimeInfo,
    Send,
    SendBatch,
    SendReply,
    TimePasses,
    UnlockBatch,
    UnregisterClient,
    UpdateBrokerConfig,
    ViewMessage,
    ViewStats,
)
from rocketspec.spec.broker_requests.admin import (
    GroupConf,
)
from rocketspec.spec.broker_requests.checks import (
    REPLY,
    RW,
    admin_topic_requests,
    auto_create_from_default,
    bad_input_changes_nothing,
    builtin_topics_stay,
    config_updates,
    groups_auto_created,
    heartbeat_registers,
    locks,
    maintenance_answers,
    notifications,
    offsets,
    offsets_answer_the_queues,
    order_topics,
    producers,
    puts_are_counted,
    queries_answer_the_log,
    queue_id_rules,
    queues_are_the_log,
    reply_pushes,
    search_finds_nearest,
    send_answer_is_the_offset,
    send_ignores_topic_perm,
    store_answers,
    stored_with_the_cluster,
    tags_pass_their_subscription,
    unit_flags,
    unregister_removes,
)
from rocketspec.spec.broker_requests.machine import (
    ADMIN,
    CLIENTS,
    CONNECTIONS,
    MAX_MESSAGES,
    MAX_TIME,
    MISC,
    QUERY,
    STORE,
    SUBSCRIPTIONS,
    TABLES,
    TRANSITIONS,
    Bounds,
)
from rocketspec.spec.broker_requests.state import (
    BrokerState,
    Settings,
    fresh_broker,
    table_put,
)
from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.protocol import (
    PERM_READ,
    RANDOM_QUEUE_ID_BOUND,
    STATS_TOPIC_PUT_NUMS,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_ZLIB,
    RequestCode,
)

INVARIANTS: tuple[Invariant[BrokerState], ...] = (
    Invariant("min/max offsets and earliest store time follow the queue", ("BRK-10",), offsets_answer_the_queues),
    Invariant("search by timestamp finds the exact or nearest message", ("BRK-11",), search_finds_nearest),
    Invariant("a tagged message passes its own tag subscription", ("BRK-9",), tags_pass_their_subscription),
    Invariant("the consume queues hold the commit log's messages, which run without gaps", ("BRK-5", "BRK-6",
                                                                                             "BRK-17"),
              queues_are_the_log),
    Invariant("the built-in topics stay as the broker started", ("BRK-2", "BRK-21"), builtin_topics_stay),
    Invariant("every stored send is counted under its topic", ("BRK-27",), puts_are_counted),
    Invariant("stored messages carry the cluster, replies as sent", ("BRK-8", "BRK-28"), stored_with_the_cluster),
)

STEP_INVARIANTS: tuple[StepInvariant[BrokerState, Action], ...] = (
    StepInvariant("a stored send answers its queue offset and msgIds", ("BRK-6", "BRK-7"),
                  send_answer_is_the_offset),
    StepInvariant("queue ids: illegal refused, negative random", ("BRK-3",), queue_id_rules),
    StepInvariant("a missing topic is created from its default topic or refused", ("BRK-2",),
                  auto_create_from_default),
    StepInvariant("a send does not check the topic perm", ("BRK-4",), send_ignores_topic_perm),
    StepInvariant("created topics carry the request's unit flags", ("BRK-23",), unit_flags),
    StepInvariant("admin create/delete topic, the topic table", ("BRK-17", "BRK-21"), admin_topic_requests),
    StepInvariant("a heartbeat registers the connection", ("BRK-13",), heartbeat_registers),
    StepInvariant("NOTIFY_CONSUMER_IDS_CHANGED goes to the group after a change", ("BRK-14",), notifications),
    StepInvariant("unregistering removes the connection", ("BRK-15",), unregister_removes),
    StepInvariant("group configs are auto-created exactly when allowed", ("BRK-20", "BRK-21"), groups_auto_created),
    StepInvariant("UPDATE_BROKER_CONFIG refuses the black list, moves the version", ("BRK-18", "BRK-24"),
                  config_updates),
    StepInvariant("a reply succeeds exactly when its requester got it", ("BRK-28", "BRK-29"), reply_pushes),
    StepInvariant("queries answer messages of the commit log as sent", ("BRK-12", "BRK-22", "BRK-31"),
                  queries_answer_the_log),
    StepInvariant("store answers follow the queues", ("BRK-10", "BRK-25", "BRK-26", "BRK-27"), store_answers),
    StepInvariant("consumer offsets are stored, answered and filtered", ("BRK-30",), offsets),
    StepInvariant("maintenance answers", ("BRK-19", "BRK-31"), maintenance_answers),
    StepInvariant("producer registrations", ("BRK-29",), producers),
    StepInvariant("queue locks", ("BRK-16",), locks),
    StepInvariant("bad input changes nothing", ("BRK-32",), bad_input_changes_nothing),
    StepInvariant("order flags come from the name server", ("BRK-1",), order_topics),
)


def bounds(max_messages: int = MAX_MESSAGES) -> Bounds:
    """The model's candidate requests per scenario."""
    store_actions: tuple[Action, ...] = (
        Send(0, "A"), Send(1), Send(-1, None, RANDOM_QUEUE_ID_BOUND - 2), Send(MODEL_REQUESTED_QUEUES),
        SendBatch(0, 2), CreateTopic(1, PERM_READ), DeleteTopic(), TimePasses(),
    )
    client_actions: tuple[Action, ...] = (
        *(Heartbeat(c, s) for c in CONNECTIONS for s in SUBSCRIPTIONS),
        *(UnregisterClient(c) for c in CONNECTIONS),
        *(ConnectionClosed(c) for c in CONNECTIONS),
    )
    admin_actions: tuple[Action, ...] = (
        Heartbeat("c1", frozenset({TOPIC}), unit_mode=True), Heartbeat("c1", group=None, producer="PG"),
        UnregisterClient("c1", group=None, producer="PG"), CreateGroup(GROUP, 2, notify=False), DeleteGroup(),
        UpdateBrokerConfig((("autoCreateSubscriptionGroup", "false"),)),
        UpdateBrokerConfig((("configBlackList", "x"),)), Send(0, topic="%RETRY%G", unit_mode=True),
        GetTopicConfig(), GetBrokerConfig(),
        Send(0, topic="U", unit_mode=True), GetGroups(), ConsumerList(), ProducerInfo(),
    )
    query_actions: tuple[Action, ...] = (
        Send(0, keys="k", uniq_key="u1", body=b"x"),
        Send(0, keys="k", uniq_key="u2", body=b"\x01", sys_flag=SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_ZLIB,
             original=b"yy", client=True),
        QueryMessage(TOPIC, "k", 32, 0, MAX_TIME), QueryMessage(TOPIC, "u1", 32, 0, MAX_TIME, unique=True),
        ViewMessage(0), ResumeHalf(0), ResumeHalf(None), TimePasses(), QueryConsumeQueue(TOPIC, 0, 1),
    )
    misc_actions: tuple[Action, ...] = (
        Heartbeat("c1", group=None, producer="PG"), SendReply(0, "c1"), SendReply(0, None, push_ok=False),

        CommitOffset(offset=1), QueryOffset(), CorrectionOffset(TOPIC, (GROUP,)), GetTopicStats(REPLY),
        Maintenance(RequestCode.CLEAN_UNUSED_TOPIC), Maintenance(RequestCode.GET_BROKER_CLUSTER_ACL_INFO),
        Maintenance(RequestCode.REGISTER_BROKER), RuntimeInfo(), ViewStats(STATS_TOPIC_PUT_NUMS, REPLY),
    )
    table_actions: tuple[Action, ...] = (
        LockBatch("c1", (0, 1)), LockBatch("c2", (1,)), UnlockBatch("c1", (1,)), OrderTopicConfig(TOPIC, True),
        CreateTopic(1, RW), Malformed(RequestCode.GET_TOPIC_STATS_INFO, "topic"), ConsumeStats(GROUP, None),
        GetSystemTopics(), ConsumedBy(), ConsumerConnections(), CommitOffset(offset=1), Heartbeat("c1", frozenset()),
    )
    return Bounds((
        (STORE, store_actions), (CLIENTS, client_actions), (ADMIN, admin_actions), (QUERY, query_actions),
        (MISC, misc_actions), (TABLES, table_actions),
    ), max_messages)


def model(max_messages: int = MAX_MESSAGES, scenarios: tuple[str, ...] | None = None
          ) -> Model[BrokerState, Action]:
    """Six slices of one broker. The store (auto creation on and off; single sends to queues -1, 0, 1, 2 with and
    without tags, batches of 2, topic creation with 1 queue read-only, deletion, two clock ticks, at most
    ``max_messages`` messages); the clients (two connections, two subscription sets, group notify on and off); the
    admin requests (group configs, auto creation switched off, the black list, unit mode, producer registrations);
    the queries (by key and unique key, by offset, half-message resume); the rest (replies, offsets, stats,
    runtime info, maintenance); the tables (queue locks, order topics, bad input, consume stats). ``scenarios``
    keeps only those slices."""
    quiet = attrs_evolve_group(fresh_broker(CLIENTS), GroupConf(notify=False))
    initial: tuple[BrokerState, ...] = (
        fresh_broker(STORE), fresh_broker(STORE, Settings(auto_create_topic=False)),
        attrs_evolve_group(fresh_broker(CLIENTS), GroupConf()), quiet,
        fresh_broker(ADMIN), fresh_broker(ADMIN, Settings(auto_create_group=False)),
        fresh_broker(QUERY, Settings(compress_over=2)), fresh_broker(MISC), fresh_broker(TABLES),
    )
    if scenarios is not None:
        initial = tuple(state for state in initial if state.scenario in scenarios)
    return TRANSITIONS.model(
        bounds(max_messages),
        f"store: topic {TOPIC}, <= {max_messages} messages, {MAX_TIME} ticks, auto-create on/off; clients: "
        f"{len(CONNECTIONS)} connections x {len(SUBSCRIPTIONS)} subscriptions, group notify on/off; admin: groups, "
        f"config, unit mode, producers; query: keys, ids, stats, offsets, replies",
        initial, INVARIANTS, STEP_INVARIANTS)


def attrs_evolve_group(state: BrokerState, conf: GroupConf) -> BrokerState:
    """``state`` with the model group's config (its notify switch also kept as ``group_notify``)."""
    return attrs.evolve(state, groups=table_put(state.groups, GROUP, conf), group_notify=conf.notify)

