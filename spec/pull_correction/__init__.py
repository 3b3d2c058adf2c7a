"""Pull offset correction: how a broker answers a pull at an offset and how a push consumer reacts.

The area follows one pull from end to end:

* the store's decision (``DefaultMessageStore.getMessage``): a ``GetMessageStatus`` and the next begin offset,
  corrected towards the queue's bounds by ``nextOffsetCorrection`` on a master (or a slave with
  ``offsetCheckInSlave``), or the progress of a scan of the consume queue (``next = offset + entries scanned``);
* the broker's answer (``PullMessageProcessor.processRequest``): pre-checks in order, status → response code,
  the slave downgrade of ``PULL_OFFSET_MOVED``, the suggested broker id, long-poll suspension
  (``PullRequestHoldService``) and the commit of the consumer's offset carried by the request;
* the client (``MQClientAPIImpl.processPullResponse``, ``DefaultMQPushConsumerImpl.pullMessage``'s
  ``PullCallback``): code → ``PullStatus`` and the reaction (next offset, ``updateOffset`` with or without
  ``increaseOnly``, the ``OFFSET_ILLEGAL`` drop and the persist + remove 10 s later, the re-pull delay), and the
  rebalance that adds the queue back from the broker's stored offset.

The state machine is one queue of one broker (master or slave) whose bounds move (messages are appended,
commit-log data is deleted, consume-queue files are deleted, the minimum offset is corrected) and one push
consumer pulling it with long polling, an in-memory offset store, the broker's stored offset and a process queue.

Versions (read in ``rocketmq-all-4.9.0`` .. ``rocketmq-all-4.9.8``): the ``OFFSET_OVERFLOW_BADLY`` correction
changed in 4.9.4 (ISSUE #4215): 4.9.0-4.9.3 (and seed 001) correct to ``min`` when ``min == 0`` and to ``max``
otherwise; 4.9.4+ always to ``max``. A ``FLOW_CONTROL`` pull error is retried after 20 ms since 4.9.5 (1000 ms,
before, as any other error). ``PullMessageProcessor`` and ``PullRequestHoldService`` behave the same in all 4.9.x.

Note on seed 001 §4.3.3: it says the consumer stores an ``OFFSET_ILLEGAL`` correction only when it is larger than its
progress; the code (all 4.9.x) stores it with ``increaseOnly = false``, which this spec follows (PULL-22).
Descriptions of the protocol say a slave without ``slaveReadEnable`` answers ``PULL_RETRY_IMMEDIATELY``: the processor
does set that code, but the status mapping that follows overwrites it, so only the suggested broker changes (PULL-11,
PULL-12).

The area is a package: ``clauses``, ``oracles``, ``machine``, ``invariants`` (see ``docs/spec-authoring.md``);
every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.pull_correction.clauses import (
    CLAUSES,
)
from rocketspec.spec.pull_correction.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    model,
)
from rocketspec.spec.pull_correction.machine import (
    Action,
    Answer,
    Append,
    Config,
    Consume,
    CorrectMinOffset,
    DelayedFix,
    DeleteCommitLog,
    DeleteConsumeQueueFile,
    HoldTimeout,
    PersistAll,
    ProcessQueue,
    Pull,
    PullState,
    Rebalance,
    Store,
    Wake,
    decide,
    enabled,
    step,
)
from rocketspec.spec.pull_correction.oracles import (
    ERROR_DELAYS_MS,
    GONE_ENTRIES,
    MIN_SCAN_ENTRIES,
    MOVED_CODES,
    NO_MESSAGE_STATUSES,
    NOT_FOUND_STATUSES,
    PULL_CODES,
    SCAN_STATUSES,
    SUBSCRIPTION_STATE_CODES,
    V4_9_4,
    WAIT_STATUSES,
    BrokerAnswer,
    CqEntry,
    HoldOutcome,
    OffsetUpdate,
    Reaction,
    ScanOutcome,
    StoreDecision,
    apply_offset_update,
    arrival_wakes_held,
    bounds_decision,
    broker_commits,
    client_reaction,
    commit_flag,
    full_batch,
    held_request_outcome,
    hold_check_interval_ms,
    next_offset_correction,
    pull_precheck,
    pull_status,
    response_code,
    roll_next_file,
    scan_queue,
    store_status,
)

__all__ = [
    "CLAUSES",
    "ERROR_DELAYS_MS",
    "GONE_ENTRIES",
    "INVARIANTS",
    "MIN_SCAN_ENTRIES",
    "MOVED_CODES",
    "NOT_FOUND_STATUSES",
    "NO_MESSAGE_STATUSES",
    "PULL_CODES",
    "SCAN_STATUSES",
    "STEP_INVARIANTS",
    "SUBSCRIPTION_STATE_CODES",
    "V4_9_4",
    "WAIT_STATUSES",
    "Action",
    "Answer",
    "Append",
    "BrokerAnswer",
    "Config",
    "Consume",
    "CorrectMinOffset",
    "CqEntry",
    "DelayedFix",
    "DeleteCommitLog",
    "DeleteConsumeQueueFile",
    "HoldOutcome",
    "HoldTimeout",
    "OffsetUpdate",
    "PersistAll",
    "ProcessQueue",
    "Pull",
    "PullState",
    "Reaction",
    "Rebalance",
    "ScanOutcome",
    "Store",
    "StoreDecision",
    "Wake",
    "apply_offset_update",
    "arrival_wakes_held",
    "bounds_decision",
    "broker_commits",
    "client_reaction",
    "commit_flag",
    "decide",
    "enabled",
    "full_batch",
    "held_request_outcome",
    "hold_check_interval_ms",
    "model",
    "next_offset_correction",
    "pull_precheck",
    "pull_status",
    "response_code",
    "roll_next_file",
    "scan_queue",
    "step",
    "store_status",
]
