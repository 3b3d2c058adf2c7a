"""Broker requests: sends, the store's offsets and search, queries, client registration and admin requests.

The area covers what a client observes of a 4.9.8 broker outside pulls, retries and transactions (those have their
own areas):

* the send path (``SendMessageProcessor``, ``AbstractSendMessageProcessor.msgCheck``, ``TopicValidator``,
  ``TopicConfigManager.createTopicInSendMessageMethod``, ``DefaultMessageStore.checkMessage``,
  ``CommitLog.MessageExtEncoder``): checks and their order, implicit topic creation, queue ids, message limits,
  the answer (offset message id, queue offset), batches and what is stored;
* the store's answers (``DefaultMessageStore``, ``ConsumeQueue``, ``IndexService``, ``QueryMessageProcessor``):
  min/max offsets, earliest store time, search by timestamp, query by key, view by offset, tags codes;
* client registration (``ClientManageProcessor``, ``ConsumerManager``, ``ConsumerGroupInfo``,
  ``DefaultConsumerIdsChangeListener``, ``ConsumerManageProcessor``): heartbeats, unregistration, consumer lists and
  NOTIFY_CONSUMER_IDS_CHANGED;
* admin requests (``AdminBrokerProcessor``, ``RebalanceLockManager``, ``SubscriptionGroupManager``): topics,
  subscription groups, queue locks, configuration, runtime info, unknown request codes.

The state machine has two scenarios sharing one state: a broker's store for one topic (sends, batches, topic
creation and deletion, time passing) and one consumer group's connections (heartbeats, unregistrations, closed
connections).

Versions: read in ``rocketmq-all-4.9.8`` and checked against a 4.9.8 broker; the checks and answers are the same in
every 4.9.x release.

The area is a package: ``clauses``, ``oracles``, ``machine``, ``invariants`` (see ``docs/spec-authoring.md``);
every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.broker_requests.clauses import (
    CLAUSES,
)
from rocketspec.spec.broker_requests.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    model,
)
from rocketspec.spec.broker_requests.machine import (
    CLIENTS,
    CONNECTIONS,
    GROUP,
    MAX_MESSAGES,
    MAX_TIME,
    MODEL_REQUESTED_QUEUES,
    STORE,
    SUBSCRIPTIONS,
    TOPIC,
    Action,
    BrokerState,
    ConnectionClosed,
    CreateTopic,
    DeleteTopic,
    Heartbeat,
    Send,
    SendAnswer,
    SendBatch,
    Stored,
    TimePasses,
    UnregisterClient,
    enabled,
    step,
)
from rocketspec.spec.broker_requests.oracles import (
    BLANK_TOPIC_REMARK,
    BROKER_REQUEST_CODES,
    ILLEGAL_TOPIC_REMARK,
    LONG_TOPIC_REMARK,
    GroupEvent,
    IndexedMessage,
    RequestKind,
    SendPath,
    TopicConf,
    admin_topic_check,
    batch_answer,
    batch_refused,
    broker_config_body,
    consumer_list_answer,
    group_config_exists,
    index_hash,
    is_system_topic,
    lock_batch_answer,
    message_illegal,
    notify_targets,
    offset_msg_id,
    query_by_key,
    queue_offsets,
    search_offset,
    send_check,
    send_path,
    send_queue_id,
    stored_message_length,
    stored_properties,
    tag_subscription_passes,
    tags_code,
    topic_created_on_send,
    topic_not_exist_remark,
    topic_perm_answer,
    unsupported_answer,
    validate_topic,
    view_message_answer,
)

__all__ = [
    "BLANK_TOPIC_REMARK",
    "BROKER_REQUEST_CODES",
    "CLAUSES",
    "CLIENTS",
    "CONNECTIONS",
    "GROUP",
    "ILLEGAL_TOPIC_REMARK",
    "INVARIANTS",
    "LONG_TOPIC_REMARK",
    "MAX_MESSAGES",
    "MAX_TIME",
    "MODEL_REQUESTED_QUEUES",
    "STEP_INVARIANTS",
    "STORE",
    "SUBSCRIPTIONS",
    "TOPIC",
    "Action",
    "BrokerState",
    "ConnectionClosed",
    "CreateTopic",
    "DeleteTopic",
    "GroupEvent",
    "Heartbeat",
    "IndexedMessage",
    "RequestKind",
    "Send",
    "SendAnswer",
    "SendBatch",
    "SendPath",
    "Stored",
    "TimePasses",
    "TopicConf",
    "UnregisterClient",
    "admin_topic_check",
    "batch_answer",
    "batch_refused",
    "broker_config_body",
    "consumer_list_answer",
    "enabled",
    "group_config_exists",
    "index_hash",
    "is_system_topic",
    "lock_batch_answer",
    "message_illegal",
    "model",
    "notify_targets",
    "offset_msg_id",
    "query_by_key",
    "queue_offsets",
    "search_offset",
    "send_check",
    "send_path",
    "send_queue_id",
    "step",
    "stored_message_length",
    "stored_properties",
    "tag_subscription_passes",
    "tags_code",
    "topic_created_on_send",
    "topic_not_exist_remark",
    "topic_perm_answer",
    "unsupported_answer",
    "validate_topic",
    "view_message_answer",
]
