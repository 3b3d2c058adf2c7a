"""Transactional messages: half and op topics, END_TRANSACTION, the broker's check pass and the producer's answer.

A transactional send stores a *half* message, which no consumer sees, in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0. The
producer then runs its local transaction and ends it with a oneway END_TRANSACTION: COMMIT copies the half message
to its real topic and queue, ROLLBACK does not, and both write an *op* message (tag ``d``, body = the half queue
offset) to ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` so that the check pass knows the half message is done. Half messages
nothing resolved are walked by the check pass (every 60 s): older than the transaction timeout, each is re-appended
to the half queue with one more check count and the producer group is asked (CHECK_TRANSACTION_STATE); after
``transactionCheckMax`` checks the message is discarded to ``TRANS_CHECK_MAX_TIME_TOPIC``.

Follows ``rocketmq-all-4.9.8``: broker ``transaction/queue/TransactionalMessageServiceImpl`` (check,
fillOpRemoveMap, needDiscard, needSkip, checkPrepareQueueOffset, calculateOpOffset), ``TransactionalMessageBridge``
(parseHalfMessageInner, renew*HalfMessageInner, addRemoveTagInTransactionOp), ``TransactionalMessageCheckService``,
``AbstractTransactionalMessageCheckListener`` / ``DefaultTransactionalMessageCheckListener``,
``processor/EndTransactionProcessor``, store ``CommitLogDispatcherBuildConsumeQueue``, and client
``DefaultMQProducerImpl`` (sendMessageInTransaction, endTransaction, checkTransactionState). Seeds: 004 §事务消息
(a walk-through of the same 4.x classes) and 000 §DefaultMQProducer (any producer of the group may be asked).
Seed 002 §事物回查 describes the 3.x design (a tranStateTable file scanned by a timer), which 4.x replaced; this
module does not follow it.

Version profile: the whole of 4.9.x behaves the same here. Two older differences are kept in the clauses: before
4.6.0 an op matched during the walk was not counted done (the op offset advanced one pass later), and before 4.6.1
the committed message kept ``TRAN_MSG=true``.

What the broker does **not** guarantee (TXN-11): END_TRANSACTION is not idempotent and the op queue is keyed by
half queue *entry*, not by message, so a duplicated END_TRANSACTION, an END_TRANSACTION about an entry that a check
has since re-appended, or one that lands while a pass is walking, can commit a message twice. The state machine
models those races and checks "resolved at most once" for every message that did not suffer one (TXN-25). It also
shows one case RocketMQ gets wrong without any such race: an immunity message whose op lies beyond the op batches
a pass reads is re-appended and later checked again (``model(op_batch=1, immunity=...)`` finds it). Relatedly, the
TRAN_PREPARED_QUEUE_OFFSET lookup of TXN-18 never succeeds for copies the broker makes: the offset it names is
below the half offset by the next pass, so its op is filed as done, not in the remove map.

Times are milliseconds, in the oracles and in the state machine, which runs on the broker's clock: a pass begins one
``transactionCheckInterval`` after the previous one ended and runs at once, except where its walk must wait for
more op messages (TXN-26). The explorer's model puts everything else half an interval (``EVENT_OFFSET_MS``) into an
interval of ``TICK_MS``, so that ages never tie with the timeout; the lockstep machine
(``tests/test_stateful_transaction_check.py``) steps the same table with the reference implementation's own times.

The area is a package: ``clauses``, ``oracles``, ``walk`` (the state's values and the check pass's walk), ``state``
(the state and actions), ``machine`` (the transition table), ``invariants`` (see ``docs/spec-authoring.md``);
every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.transaction_check.clauses import (
    CLAUSES,
)
from rocketspec.spec.transaction_check.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    model,
)
from rocketspec.spec.transaction_check.machine import (
    TRANSITIONS,
    Bounds,
    candidate_actions,
    enabled,
    step,
)
from rocketspec.spec.transaction_check.oracles import (
    ADVANCES,
    STOPS,
    CheckDecision,
    EndTransactionOutcome,
    HalfRewrite,
    HalfSendPath,
    OpMessage,
    OpScan,
    RestoredMessage,
    advance_op_offset,
    check_answer,
    check_decision,
    check_immunity_ms,
    consumable,
    discard_destination,
    end_transaction,
    fill_op_remove_map,
    first_end_transaction_type,
    half_message_rewrite,
    half_send_path,
    next_check_times,
    op_message,
    reset_transaction_value,
    restore_real_message,
    transaction_value,
    walk_resumes_at,
)
from rocketspec.spec.transaction_check.state import (
    Action,
    CheckLost,
    CheckPass,
    ConsumerReceives,
    EndTransactionDelivered,
    EndTransactionDuplicated,
    EndTransactionLost,
    ForgedEndTransaction,
    LocalDecides,
    LocalTransactionEnds,
    ProducerAnswers,
    ProducerLeaves,
    ProducerRegisters,
    SendHalf,
    TimePasses,
    TxnState,
    entries_of,
    initial_state,
    live_of,
    pending_walk,
    resolved,
    walk_due,
)
from rocketspec.spec.transaction_check.walk import (
    EVENT_OFFSET_MS,
    FOREIGN_GROUP,
    PRODUCER_GROUP,
    REAL_TOPIC,
    TICK_MS,
    CheckRequest,
    Config,
    EndTxnRequest,
    HalfEntry,
    OpEntry,
    Outcome,
    Phase,
    RealMessage,
    Walk,
    answer_allowed,
    half_properties,
    read_ops,
    run_walk,
)

__all__ = [
    "ADVANCES",
    "CLAUSES",
    "EVENT_OFFSET_MS",
    "FOREIGN_GROUP",
    "INVARIANTS",
    "PRODUCER_GROUP",
    "REAL_TOPIC",
    "STEP_INVARIANTS",
    "STOPS",
    "TICK_MS",
    "TRANSITIONS",
    "Action",
    "Bounds",
    "CheckDecision",
    "CheckLost",
    "CheckPass",
    "CheckRequest",
    "Config",
    "ConsumerReceives",
    "EndTransactionDelivered",
    "EndTransactionDuplicated",
    "EndTransactionLost",
    "EndTransactionOutcome",
    "EndTxnRequest",
    "ForgedEndTransaction",
    "HalfEntry",
    "HalfRewrite",
    "HalfSendPath",
    "LocalDecides",
    "LocalTransactionEnds",
    "OpEntry",
    "OpMessage",
    "OpScan",
    "Outcome",
    "Phase",
    "ProducerAnswers",
    "ProducerLeaves",
    "ProducerRegisters",
    "RealMessage",
    "RestoredMessage",
    "SendHalf",
    "TimePasses",
    "TxnState",
    "Walk",
    "advance_op_offset",
    "answer_allowed",
    "candidate_actions",
    "check_answer",
    "check_decision",
    "check_immunity_ms",
    "consumable",
    "discard_destination",
    "enabled",
    "end_transaction",
    "entries_of",
    "fill_op_remove_map",
    "first_end_transaction_type",
    "half_message_rewrite",
    "half_properties",
    "half_send_path",
    "initial_state",
    "live_of",
    "model",
    "next_check_times",
    "op_message",
    "pending_walk",
    "read_ops",
    "reset_transaction_value",
    "resolved",
    "restore_real_message",
    "run_walk",
    "step",
    "transaction_value",
    "walk_due",
    "walk_resumes_at",
]
