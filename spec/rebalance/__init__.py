"""Consumer rebalance: queue allocation, the process-queue table, and the orderly broker lock.

Follows RocketMQ 4.x ``RebalanceImpl`` (``rebalanceByTopic``, ``updateProcessQueueTableInRebalance``, ``lock``,
``lockAll``), ``RebalancePushImpl`` (``removeUnnecessaryMessageQueue``, ``computePullFromWhereWithException``),
the strategies of ``client/consumer/rebalance`` (``AllocateMessageQueueAveragely``, ``...AveragelyByCircle``,
``...ConsistentHash`` with ``ConsistentHashRouter``, ``...ByConfig``, ``...ByMachineRoom``),
``ConsumeMessageOrderlyService`` (when a batch may start) and the broker's ``RebalanceLockManager``.

Every consumer of a clustering group allocates on its own, from the queue list of its cached route and the
client id list it just fetched from a broker; consumers agree only because they sort both lists the same way.
The state machine gives each consumer its own view, process-queue table and offsets; brokers hold the stored
offsets, the registered client ids and the orderly queue locks.

Abstractions of the machine (each only adds behaviour or drops state nothing observable depends on):
time is a set of events whose guards carry the timing facts (REB-18); a lock flag's expiry and the broker
lock's later expiry are one ``LockLapsed`` step; an orderly batch is one step, and a batch still running when
its queue is dropped is the rebalance's ``busy`` choice (its result commits nothing, REB-16); offsets are
tracked on the first ``loaded`` queues only; ``synced`` is a ghost flag saying a consumer's last rebalance ran
on the id list and route that still hold. Contract ``pre:`` lines bound what CrossHair explores; they do not
restrict callers.

Version notes (``profile``): up to 4.9.4 a new ProcessQueue is created unlocked, from 4.9.5 locked (REB-15);
the argument checks of MACHINE_ROOM changed in 4.9.3 and 4.9.4 (REB-2).

Broadcasting groups (REB-8, REB-26, REB-27) take every queue of the route, keep offsets in each consumer's local
store, and (orderly) lock a queue only to add it. The machine is a transition table (``TRANSITIONS``, ``machine``);
its state and actions are in ``state``.

The area is a package: ``clauses``, ``oracles``, ``state``, ``machine``, ``invariants`` (see
``docs/spec-authoring.md``); every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.rebalance.candidates import Bounds
from rocketspec.spec.rebalance.clauses import (
    CLAUSES,
)
from rocketspec.spec.rebalance.invariants import (
    DEFAULT_BOUNDS,
    DEFAULT_GROUPS,
    INVARIANTS,
    STEP_INVARIANTS,
    candidate_actions,
    group,
    initial_state,
    model,
    views_agree,
)
from rocketspec.spec.rebalance.machine import (
    TRANSITIONS,
    enabled,
    step,
)
from rocketspec.spec.rebalance.oracles import (
    BROADCASTING,
    CLUSTERING,
    DEFAULT_VIRTUAL_NODES,
    FIRST_OFFSET,
    HASH_SPACE,
    LAST_OFFSET,
    NOT_ADDED,
    PASSIVELY,
    STRATEGIES,
    TIMESTAMP,
    AllocationRejected,
    Removal,
    RouteQueueData,
    TablePlan,
    Unlock,
    allocate,
    allocate_by_config,
    allocate_by_machine_room,
    assignment,
    avg_slice,
    broker_lock_granted,
    circle_positions,
    compute_pull_from_where,
    hash_ring,
    machine_room_positions,
    new_queue_locked,
    orderly_batch_may_start,
    plan_table_update,
    pull_commit_offset,
    pull_expired,
    rebalance_target,
    removal,
    ring_hash,
    ring_owner,
    route_queues,
    truncated_queues,
)
from rocketspec.spec.rebalance.state import (
    Action,
    BatchConsumed,
    BrokerLeftRoute,
    BrokerLockReleased,
    BrokerRestarted,
    ClientEvicted,
    ConsumerCrashed,
    ConsumerShutdown,
    ConsumerStarted,
    ConsumerState,
    GroupState,
    HeartbeatSent,
    LockLapsed,
    LockRenewed,
    MessageConsumed,
    OffsetCommitted,
    OffsetsPersisted,
    Phase,
    ProcessQueueState,
    PullExpired,
    Rebalanced,
    RouteChanged,
    RouteRefreshed,
    Setup,
    Table,
    UnlockArrived,
    describe,
)

__all__ = [
    "BROADCASTING",
    "CLAUSES",
    "CLUSTERING",
    "DEFAULT_BOUNDS",
    "DEFAULT_GROUPS",
    "DEFAULT_VIRTUAL_NODES",
    "FIRST_OFFSET",
    "HASH_SPACE",
    "INVARIANTS",
    "LAST_OFFSET",
    "NOT_ADDED",
    "PASSIVELY",
    "STEP_INVARIANTS",
    "STRATEGIES",
    "TIMESTAMP",
    "TRANSITIONS",
    "Action",
    "AllocationRejected",
    "BatchConsumed",
    "Bounds",
    "BrokerLeftRoute",
    "BrokerLockReleased",
    "BrokerRestarted",
    "ClientEvicted",
    "ConsumerCrashed",
    "ConsumerShutdown",
    "ConsumerStarted",
    "ConsumerState",
    "GroupState",
    "HeartbeatSent",
    "LockLapsed",
    "LockRenewed",
    "MessageConsumed",
    "OffsetCommitted",
    "OffsetsPersisted",
    "Phase",
    "ProcessQueueState",
    "PullExpired",
    "Rebalanced",
    "Removal",
    "RouteChanged",
    "RouteQueueData",
    "RouteRefreshed",
    "Setup",
    "Table",
    "TablePlan",
    "Unlock",
    "UnlockArrived",
    "allocate",
    "allocate_by_config",
    "allocate_by_machine_room",
    "assignment",
    "avg_slice",
    "broker_lock_granted",
    "candidate_actions",
    "circle_positions",
    "compute_pull_from_where",
    "describe",
    "enabled",
    "group",
    "hash_ring",
    "initial_state",
    "machine_room_positions",
    "model",
    "new_queue_locked",
    "orderly_batch_may_start",
    "plan_table_update",
    "pull_commit_offset",
    "pull_expired",
    "rebalance_target",
    "removal",
    "ring_hash",
    "ring_owner",
    "route_queues",
    "step",
    "truncated_queues",
    "views_agree",
]
