"""Transaction check: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.protocol import (
    FILE_RESERVED_TIME_HOURS,
    TRANS_CHECK_MAX_TIME_QUEUE_NUMS,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_OP_REMOVE_TAG,
    TRANSACTION_CHECK_MAX,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_MAX_PROCESS_TIME_MS,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TIMEOUT_MS,
    Property,
    PutMessageStatus,
    ResponseCode,
    SendStatus,
    TransactionState,
)
from rocketspec.spec.transaction_check.clauses import CLAUSES
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# ---------------------------------------------------------------------------------------------------------------
# Oracles: the half message, END_TRANSACTION and the producer's answers.


class HalfSendPath(enum.Enum):
    """How a broker handles a sent message (TXN-1)."""

    NORMAL = "NORMAL"
    HALF = "HALF"
    REJECTED = "REJECTED"


def _java_parse_boolean(text: str | None) -> bool:
    # Boolean.parseBoolean is equalsIgnoreCase("true"); no character outside ASCII folds to t, r, u or e.
    if text is None or len(text) != 4:
        return False
    return all(c in pair for c, pair in zip(text, ("tT", "rR", "uU", "eE"), strict=True))


@CLAUSES.oracle("TXN-1")
def half_send_path(tran_msg: str | None, reject_transaction_message: bool = False) -> HalfSendPath:
    """Whether a sent message with TRAN_MSG ``tran_msg`` is stored as a half message (TXN-1).

    TRAN_MSG is read with ``Boolean.parseBoolean`` (``"true"`` in any case); a broker configured with
    ``rejectTransactionMessage`` answers such a send with NO_PERMISSION (REJECTED).

    pre: tran_msg is None or len(tran_msg) <= 5
    post: tran_msg not in ("true", "TRUE", "True", "tRuE") or __return__ != HalfSendPath.NORMAL
    post: __return__ == HalfSendPath.NORMAL or (tran_msg is not None and len(tran_msg) == 4)
    post: __return__ != HalfSendPath.REJECTED or reject_transaction_message
    post: __return__ != HalfSendPath.HALF or not reject_transaction_message
    """
    if not _java_parse_boolean(tran_msg):
        return HalfSendPath.NORMAL
    return HalfSendPath.REJECTED if reject_transaction_message else HalfSendPath.HALF


def transaction_value(sys_flag: int) -> int:
    """``MessageSysFlag.getTransactionValue``: the transaction bits (mask 0xC) of ``sys_flag``."""
    # flag & 0xC in arithmetic form (equal for every int), which the symbolic checker can reason about.
    return sys_flag // TRANSACTION_PREPARED_TYPE % 4 * TRANSACTION_PREPARED_TYPE


def reset_transaction_value(sys_flag: int, transaction_type: int) -> int:
    """``MessageSysFlag.resetTransactionValue``: set the transaction bits of ``sys_flag`` to ``transaction_type``."""
    return sys_flag - transaction_value(sys_flag) + transaction_type


@attrs.frozen
class HalfRewrite:
    """Where and how a half message is stored (TXN-2)."""

    topic: str
    queue_id: int
    sys_flag: int
    real_topic: str
    real_queue_id: str


@CLAUSES.oracle("TXN-2")
def half_message_rewrite(topic: str, queue_id: int, sys_flag: int) -> HalfRewrite:
    """How the broker stores a half message sent to ``topic``/``queue_id`` (TXN-2).

    The original topic and queue go to REAL_TOPIC/REAL_QID (the queue id as decimal text); the message goes to
    queue 0 of RMQ_SYS_TRANS_HALF_TOPIC with its transaction bits reset to NOT_TYPE, so that the store builds
    the half topic's consume queue (a PREPARED message would get none, TXN-3).

    pre: 0 <= queue_id < 1024
    pre: 0 <= sys_flag < 2 ** 31
    post: __return__.topic == TRANS_HALF_TOPIC and __return__.queue_id == 0
    post: (__return__.sys_flag // 4) % 4 == 0
    post: __return__.sys_flag - transaction_value(__return__.sys_flag) == sys_flag - transaction_value(sys_flag)
    post: __return__.real_topic == topic and int(__return__.real_queue_id) == queue_id
    """
    return HalfRewrite(
        topic=TRANS_HALF_TOPIC,
        queue_id=0,
        sys_flag=reset_transaction_value(sys_flag, TRANSACTION_NOT_TYPE),
        real_topic=topic,
        real_queue_id=str(queue_id),
    )


@CLAUSES.oracle("TXN-3")
def consumable(sys_flag: int) -> bool:
    """Whether a stored message with ``sys_flag`` gets a consume-queue entry (TXN-3).

    Only transaction bits NOT_TYPE (ordinary and half messages) and COMMIT_TYPE (committed transactional
    messages) are dispatched; PREPARED and ROLLBACK messages stay in the commit log only.

    pre: 0 <= sys_flag < 2 ** 31
    post: __return__ == ((sys_flag // 4) % 2 == 0)
    post: __return__ or transaction_value(sys_flag) in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
    """
    return transaction_value(sys_flag) in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)


def _commit_or_rollback(state: TransactionState) -> int:
    if state is TransactionState.COMMIT_MESSAGE:
        return TRANSACTION_COMMIT_TYPE
    if state is TransactionState.ROLLBACK_MESSAGE:
        return TRANSACTION_ROLLBACK_TYPE
    return TRANSACTION_NOT_TYPE


@CLAUSES.oracle("TXN-4")
def first_end_transaction_type(
    send_status: SendStatus, local_state: TransactionState | None, raised: bool = False
) -> int:
    """commitOrRollback of the END_TRANSACTION the sender sends after the half message (TXN-4).

    SEND_OK: the local transaction runs; its state maps COMMIT -> 0x8, ROLLBACK -> 0xC, UNKNOW -> 0x0, and a null
    state or an exception (``raised``) counts as UNKNOW. Any other send status ends the transaction with
    ROLLBACK and the local transaction is never run.

    post: send_status == SendStatus.SEND_OK or __return__ == TRANSACTION_ROLLBACK_TYPE
    post: __return__ in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE)
    post: __return__ != TRANSACTION_COMMIT_TYPE or (local_state == TransactionState.COMMIT_MESSAGE and not raised)
    post: send_status != SendStatus.SEND_OK or not raised or __return__ == TRANSACTION_NOT_TYPE
    """
    if send_status is not SendStatus.SEND_OK:
        return TRANSACTION_ROLLBACK_TYPE
    if raised or local_state is None:
        return TRANSACTION_NOT_TYPE
    return _commit_or_rollback(local_state)


@CLAUSES.oracle("TXN-21")
def check_answer(state: TransactionState | None, raised: bool = False, has_listener: bool = True) -> int | None:
    """commitOrRollback the producer answers a CHECK_TRANSACTION_STATE with, or None if it sends nothing (TXN-21).

    The answer is a oneway END_TRANSACTION with fromTransactionCheck=true that names the check's own
    commitLogOffset and tranStateTableOffset (the re-appended copy). COMMIT -> 0x8, ROLLBACK -> 0xC, UNKNOW or
    an exception in the check listener -> 0x0. A listener returning null makes the check thread fail before
    sending (``switch`` on null), and with no listener at all nothing is sent either.

    post: __return__ != TRANSACTION_COMMIT_TYPE or (state == TransactionState.COMMIT_MESSAGE and not raised)
    post: __return__ != TRANSACTION_ROLLBACK_TYPE or (state == TransactionState.ROLLBACK_MESSAGE and not raised)
    post: (__return__ is None) == (not has_listener or (state is None and not raised))
    """
    if not has_listener:
        return None
    if raised:
        return TRANSACTION_NOT_TYPE
    if state is None:
        return None
    return _commit_or_rollback(state)


@attrs.frozen
class EndTransactionOutcome:
    """What the broker does with one END_TRANSACTION: its response (None: no response) and its writes."""

    response: ResponseCode | None
    stores_real: bool
    writes_op: bool


# PutMessageStatus -> END_TRANSACTION response (EndTransactionProcessor.sendFinalMessage).
_FINAL_PUT_RESPONSE: dict[PutMessageStatus, ResponseCode] = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.SUCCESS,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SUCCESS,
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.OS_PAGECACHE_BUSY: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.UNKNOWN_ERROR: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.LMQ_CONSUME_QUEUE_NUM_EXCEEDED: ResponseCode.SYSTEM_ERROR,
}

_NOTHING = EndTransactionOutcome(None, False, False)


@CLAUSES.oracle("TXN-5", "TXN-6", "TXN-7", "TXN-8", "TXN-9", "TXN-11")
def end_transaction(
    commit_or_rollback: int,
    producer_group: str,
    tran_state_table_offset: int,
    commit_log_offset: int,
    found: bool,
    stored_group: str,
    stored_queue_offset: int,
    stored_commit_log_offset: int,
    from_transaction_check: bool = False,
    slave: bool = False,
    put_status: PutMessageStatus = PutMessageStatus.PUT_OK,
) -> EndTransactionOutcome:
    """The broker's decision on one END_TRANSACTION (TXN-5..TXN-9) given the half message at its commit-log offset.

    ``found`` says whether a message was found at ``commit_log_offset``; ``stored_*`` are its PGROUP, queue
    offset and commit-log offset. A slave answers SLAVE_NOT_AVAILABLE (TXN-5); a commitOrRollback other than
    UNKNOW gets no response and any other value a SYSTEM_ERROR (TXN-6); a missing or mismatching half message is SYSTEM_ERROR (TXN-7);
    COMMIT stores the real message and, if that store succeeded (``put_status``), writes the op (TXN-8);
    ROLLBACK writes the op only (TXN-9). ``from_transaction_check`` changes nothing but logging, and nothing here
    remembers an earlier resolution: the same request accepted twice commits twice (TXN-11).

    pre: len(producer_group) <= 2 and len(stored_group) <= 2
    post: commit_or_rollback in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE) or __return__ == EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    post: not slave or commit_or_rollback not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE) or __return__ == EndTransactionOutcome(ResponseCode.SLAVE_NOT_AVAILABLE, False, False)
    post: slave or (__return__.response is None) == (commit_or_rollback == TRANSACTION_NOT_TYPE)
    post: not __return__.stores_real or (commit_or_rollback == TRANSACTION_COMMIT_TYPE and __return__.writes_op)
    post: not __return__.writes_op or (found and stored_group == producer_group and stored_queue_offset == tran_state_table_offset and stored_commit_log_offset == commit_log_offset)
    post: __return__.writes_op == (__return__.response == ResponseCode.SUCCESS) and (__return__.writes_op == __return__.stores_real or commit_or_rollback == TRANSACTION_ROLLBACK_TYPE)
    """  # noqa: E501
    if commit_or_rollback not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
        # EndTransactionRequestHeader.checkFields throws while the header is decoded, before anything else.
        return EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    if slave:
        return EndTransactionOutcome(ResponseCode.SLAVE_NOT_AVAILABLE, False, False)
    # fromTransactionCheck selects a log line only; the two switches accept the same values.
    del from_transaction_check
    if commit_or_rollback == TRANSACTION_NOT_TYPE:
        return _NOTHING
    if not found:
        return EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    if (
        stored_group != producer_group
        or stored_queue_offset != tran_state_table_offset
        or stored_commit_log_offset != commit_log_offset
    ):
        return EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    if commit_or_rollback == TRANSACTION_ROLLBACK_TYPE:
        return EndTransactionOutcome(ResponseCode.SUCCESS, False, True)
    response = _FINAL_PUT_RESPONSE[put_status]
    stored = response == ResponseCode.SUCCESS
    return EndTransactionOutcome(response, stored, stored)


@attrs.frozen
class RestoredMessage:
    """The real message a COMMIT stores (TXN-8)."""

    topic: str
    queue_id: int
    sys_flag: int
    properties: tuple[tuple[str, str], ...]


@CLAUSES.oracle("TXN-8")
def restore_real_message(
    properties: tuple[tuple[str, str], ...], sys_flag: int, profile: VersionProfile = DEFAULT_PROFILE
) -> RestoredMessage:
    """The message COMMIT stores, from the half message's ``properties`` and ``sys_flag`` (TXN-8).

    Topic and queue come from REAL_TOPIC and REAL_QID, which are then removed; the transaction bits become
    COMMIT; from 4.6.1 TRAN_MSG is removed as well (before, the committed message kept TRAN_MSG=true). Other
    properties (PGROUP, UNIQ_KEY, TRANSACTION_CHECK_TIMES, ...) are kept. ``properties`` are (name, value) pairs
    with distinct names, in the order returned.

    pre: 2 <= len(properties) <= 3
    pre: properties[0][0] == Property.REAL_TOPIC and properties[1] in ((Property.REAL_QUEUE_ID, "0"), (Property.REAL_QUEUE_ID, "15"))
    pre: len(properties) == 2 or properties[2][0] not in (Property.REAL_TOPIC, Property.REAL_QUEUE_ID)
    pre: 0 <= sys_flag < 2 ** 31
    post: transaction_value(__return__.sys_flag) == TRANSACTION_COMMIT_TYPE
    post: __return__.sys_flag - transaction_value(__return__.sys_flag) == sys_flag - transaction_value(sys_flag)
    post: (__return__.topic, str(__return__.queue_id)) == (properties[0][1], properties[1][1])
    post: all(k not in (Property.REAL_TOPIC, Property.REAL_QUEUE_ID) for k, _ in __return__.properties)
    post: len(__return__.properties) <= len(properties) - 2
    """  # noqa: E501
    dropped: tuple[str, ...] = (Property.REAL_TOPIC, Property.REAL_QUEUE_ID)
    if profile.at_least("4.6.1"):
        dropped = (*dropped, Property.TRANSACTION_PREPARED)
    topic = next(v for k, v in properties if k == Property.REAL_TOPIC)
    queue_id = next(v for k, v in properties if k == Property.REAL_QUEUE_ID)
    return RestoredMessage(
        topic=topic,
        queue_id=int(queue_id),
        sys_flag=reset_transaction_value(sys_flag, TRANSACTION_COMMIT_TYPE),
        properties=tuple((k, v) for k, v in properties if k not in dropped),
    )


@attrs.frozen
class OpMessage:
    """An op message (TXN-10)."""

    topic: str
    queue_id: int
    tag: str
    body: str


@CLAUSES.oracle("TXN-10")
def op_message(half_queue_id: int, half_queue_offset: int) -> OpMessage:
    """The op message that marks the half message at ``half_queue_offset`` resolved (TXN-10).

    pre: 0 <= half_queue_id < 1024
    pre: 0 <= half_queue_offset < 10 ** 5
    post: __return__.topic == TRANS_OP_HALF_TOPIC and __return__.tag == TRANS_OP_REMOVE_TAG
    post: __return__.queue_id == half_queue_id
    post: int(__return__.body) == half_queue_offset
    post: __return__.body[0] != "0" or __return__.body == "0"
    """
    return OpMessage(TRANS_OP_HALF_TOPIC, half_queue_id, TRANS_OP_REMOVE_TAG, str(half_queue_offset))


# ---------------------------------------------------------------------------------------------------------------
# Oracles: the check pass.


class CheckDecision(enum.Enum):
    """What one step of the check walk does with the half message at the current offset (TXN-14..TXN-19)."""

    STOP_TIME_LIMIT = "STOP_TIME_LIMIT"  # the pass ran past 60 s: stop here
    SKIP_DONE = "SKIP_DONE"  # its op is in the remove map: skip, op done
    DISCARD = "DISCARD"  # checked too often or too old: to TRANS_CHECK_MAX_TIME_TOPIC, move on
    STOP_FRESH = "STOP_FRESH"  # stored after the pass began: stop here
    STOP_NEW = "STOP_NEW"  # younger than the timeout: stop here
    IMMUNITY_DONE = "IMMUNITY_DONE"  # its TRAN_PREPARED_QUEUE_OFFSET is in the remove map: skip, op done
    IMMUNITY_PUT_BACK = "IMMUNITY_PUT_BACK"  # re-append with TRAN_PREPARED_QUEUE_OFFSET, move on, no check
    CHECK = "CHECK"  # re-append and ask the producer group, move on
    RETRY = "RETRY"  # the re-append failed: look at the same offset again
    FETCH_MORE_OPS = "FETCH_MORE_OPS"  # read the next op batch, look at the same offset again


#: Decisions after which the walk moves to the next offset.
ADVANCES = frozenset(
    {CheckDecision.SKIP_DONE, CheckDecision.DISCARD, CheckDecision.IMMUNITY_DONE, CheckDecision.IMMUNITY_PUT_BACK,
     CheckDecision.CHECK}
)
#: Decisions that end the walk.
STOPS = frozenset({CheckDecision.STOP_TIME_LIMIT, CheckDecision.STOP_FRESH, CheckDecision.STOP_NEW})


@CLAUSES.oracle("TXN-15", "TXN-23")
def next_check_times(check_times: int | None, check_max: int = TRANSACTION_CHECK_MAX) -> int | None:
    """The TRANSACTION_CHECK_TIMES a re-appended copy carries, or None if the message is discarded (TXN-15).

    Absent -> 1 (whatever ``check_max``); a value >= ``check_max`` -> discard; otherwise value + 1. So a
    message is re-appended at most max(check_max, 1) times (TXN-23). An unparsable value reads as -1.

    pre: -2 <= check_max <= 1000
    pre: check_times is None or -2 <= check_times <= 1000
    post: __return__ is None or __return__ <= max(check_max, 1)
    post: (__return__ is None) == (check_times is not None and check_times >= check_max)
    post: __return__ is None or check_times is None or __return__ == check_times + 1
    """
    if check_times is None:
        return 1
    if check_times >= check_max:
        return None
    return check_times + 1


@CLAUSES.oracle("TXN-18")
def check_immunity_ms(immunity_seconds: int | None, transaction_timeout: int = TRANSACTION_TIMEOUT_MS) -> int:
    """The immunity time (ms) of a half message with CHECK_IMMUNITY_TIME_IN_SECONDS ``immunity_seconds`` (TXN-18).

    No property -> the transaction timeout; -1 (also what an unparsable value reads as) -> the timeout;
    otherwise the value times 1000.

    pre: immunity_seconds is None or -10 ** 6 <= immunity_seconds <= 10 ** 6
    pre: 0 <= transaction_timeout <= 10 ** 9
    post: immunity_seconds in (None, -1) or __return__ == immunity_seconds * 1000
    post: immunity_seconds not in (None, -1) or __return__ == transaction_timeout
    """
    if immunity_seconds is None or immunity_seconds == -1:
        return transaction_timeout
    return immunity_seconds * 1000


@CLAUSES.oracle("TXN-12", "TXN-14", "TXN-15", "TXN-16", "TXN-17", "TXN-18", "TXN-19", "TXN-23")
def check_decision(
    now: int,
    pass_start: int,
    born: int,
    stored: int,
    in_remove_map: bool,
    check_times: int | None,
    immunity_seconds: int | None = None,
    prepared_offset: int | None = None,
    prepared_in_remove_map: bool = False,
    ops_empty: bool = True,
    last_op_born: int = 0,
    check_max: int = TRANSACTION_CHECK_MAX,
    transaction_timeout: int = TRANSACTION_TIMEOUT_MS,
    file_reserved_hours: int = FILE_RESERVED_TIME_HOURS,
    store_ok: bool = True,
) -> CheckDecision:
    """One step of the check walk at a half offset whose message was found (TXN-12, TXN-14..TXN-19).

    Times are ms: ``now`` (broker clock), ``pass_start``, the message's ``born`` (producer clock) and ``stored``
    timestamps; ``last_op_born`` is the born time of the last op message of the current batch (``ops_empty``:
    the last op read returned no messages). ``check_times``, ``immunity_seconds`` and ``prepared_offset`` are
    the TRANSACTION_CHECK_TIMES, CHECK_IMMUNITY_TIME_IN_SECONDS and TRAN_PREPARED_QUEUE_OFFSET properties
    (None: absent; -1: unparsable). ``store_ok`` is whether a re-append would succeed. Rules, in order: past
    ``TRANSACTION_MAX_PROCESS_TIME_MS`` stop (TXN-12); in the remove map skip (TXN-14); count or age -> discard
    (TXN-15, TXN-16); stored at or after the pass began -> stop (TXN-17); immunity (TXN-18); the check condition
    (TXN-19). A message that reached its maximum check count is never checked again (TXN-23).

    pre: 0 <= pass_start <= now
    post: not in_remove_map or __return__ in (CheckDecision.SKIP_DONE, CheckDecision.STOP_TIME_LIMIT)
    post: __return__ not in (CheckDecision.CHECK, CheckDecision.IMMUNITY_PUT_BACK) or ((check_times is None or check_times < check_max) and stored < pass_start and store_ok)
    post: __return__ != CheckDecision.DISCARD or (check_times is not None and check_times >= check_max) or now - born > file_reserved_hours * 3600 * 1000
    post: __return__ != CheckDecision.CHECK or not ops_empty or now - born <= -1 or now - born > (transaction_timeout if immunity_seconds in (None, -1) else immunity_seconds * 1000)
    post: __return__ != CheckDecision.STOP_NEW or (immunity_seconds is None and 0 <= now - born < transaction_timeout and stored < pass_start)
    post: __return__ != CheckDecision.IMMUNITY_PUT_BACK or now - born < (transaction_timeout if immunity_seconds in (None, -1) else immunity_seconds * 1000)
    """  # noqa: E501
    # The count and immunity rules are those of next_check_times and check_immunity_ms, written out so that
    # CrossHair can follow them (the tests check that the three agree).
    if now - pass_start > TRANSACTION_MAX_PROCESS_TIME_MS:
        return CheckDecision.STOP_TIME_LIMIT
    if in_remove_map:
        return CheckDecision.SKIP_DONE
    if check_times is not None and check_times >= check_max:
        return CheckDecision.DISCARD
    age = now - born
    if age > file_reserved_hours * 3600 * 1000:
        return CheckDecision.DISCARD
    if stored >= pass_start:
        return CheckDecision.STOP_FRESH
    if immunity_seconds is None or immunity_seconds == -1:
        immunity = transaction_timeout
    else:
        immunity = immunity_seconds * 1000
    if immunity_seconds is not None:
        if age < immunity:
            if prepared_offset is None:
                if store_ok:
                    return CheckDecision.IMMUNITY_PUT_BACK
            elif prepared_offset != -1:
                if prepared_in_remove_map:
                    return CheckDecision.IMMUNITY_DONE
                if store_ok:
                    return CheckDecision.IMMUNITY_PUT_BACK
            # -1, or the re-append failed: the check condition below decides.
    elif 0 <= age < transaction_timeout:
        return CheckDecision.STOP_NEW
    need_check = (
        (ops_empty and age > immunity)
        or (not ops_empty and last_op_born - pass_start > transaction_timeout)
        or age <= -1
    )
    if not need_check:
        return CheckDecision.FETCH_MORE_OPS
    return CheckDecision.CHECK if store_ok else CheckDecision.RETRY


@CLAUSES.oracle("TXN-16")
def discard_destination(random_value: int) -> tuple[str, int]:
    """Topic and queue a discarded half message is stored to, given the listener's random draw (TXN-16).

    ``DefaultTransactionalMessageCheckListener`` takes ``ThreadLocalRandom.nextInt(99999999)`` modulo the
    queue count of TRANS_CHECK_MAX_TIME_TOPIC, which it creates with one queue: always queue 0.

    pre: 0 <= random_value < 99999999
    post: __return__[0] == TRANS_CHECK_MAX_TIME_TOPIC
    post: __return__[1] == 0
    """
    return TRANS_CHECK_MAX_TIME_TOPIC, random_value % TRANS_CHECK_MAX_TIME_QUEUE_NUMS


@attrs.frozen
class OpScan:
    """The remove map (half offset -> op offset, sorted by half offset) and the done op offsets of a pass."""

    remove: tuple[tuple[int, int], ...] = ()
    done: tuple[int, ...] = ()


@CLAUSES.oracle("TXN-13")
def fill_op_remove_map(scan: OpScan, ops: tuple[tuple[int, int], ...], mini_offset: int) -> OpScan:
    """Add one batch of op messages to a pass's remove map and done list (TXN-13).

    ``ops`` are (op queue offset, half offset in the body) in op-queue order. An op naming a half offset below
    ``mini_offset`` (the half offset the pass started from) is done at once; any other is put in the remove
    map, where a later op for the same half offset replaces the earlier one (whose op offset is then in neither
    place, so the op offset cannot advance past it, TXN-20).

    pre: len(ops) <= 2 and len(scan.remove) <= 1 and len(scan.done) <= 1
    pre: all(h >= mini_offset for h, _ in scan.remove)
    pre: all(ops[k][0] == ops[0][0] + k for k in range(len(ops)))
    pre: not ops or (all(d < ops[0][0] for d in scan.done) and all(o < ops[0][0] for _, o in scan.remove))
    post: all(h >= mini_offset for h, _ in __return__.remove)
    post: all((o in __return__.done) == (h < mini_offset) for o, h in ops)
    post: all((h, o) in __return__.remove for n, (o, h) in enumerate(ops) if h >= mini_offset and all(h2 != h for _, h2 in ops[n + 1:]))
    """  # noqa: E501
    remove = list(scan.remove)
    done = list(scan.done)
    for op_offset, half_offset in ops:
        if half_offset < mini_offset:
            done.append(op_offset)
        else:
            # HashMap.put: a later op for the same half offset replaces the earlier one.
            remove = [(h, o) for h, o in remove if h != half_offset]
            remove.append((half_offset, op_offset))
    return OpScan(tuple(sorted(remove)), tuple(sorted(done)))


@CLAUSES.oracle("TXN-20")
def advance_op_offset(op_offset: int, done: tuple[int, ...]) -> int:
    """The op consume offset after a pass that started at ``op_offset`` and found ``done`` ops done (TXN-20).

    The done offsets are sorted and the offset advances while the next one equals it; the first gap (or a
    repeated offset) stops it, so an op not yet done is never passed.

    pre: len(done) <= 3
    pre: 0 <= op_offset <= 100 and all(op_offset <= d <= 100 for d in done)
    post: op_offset <= __return__ <= op_offset + len(done)
    post: all(o in done for o in range(op_offset, __return__))
    post: len(set(done)) != len(done) or __return__ not in done
    """
    new_offset = op_offset
    for d in sorted(done):
        if d != new_offset:
            break
        new_offset += 1
    return new_offset


@CLAUSES.oracle("TXN-26")
def walk_resumes_at(born: int, immunity_ms: int, pass_start: int) -> int:
    """When a walk waiting for more op messages at a half message born at ``born`` goes on, unless a new op message
    arrives first (TXN-26).

    Java's check thread re-reads the op queue in a busy loop. Until a new op message is there, nothing it reads
    changes, so only the clock can end the wait: the message growing older than ``immunity_ms`` (the check then
    becomes due) or the pass running more than ``TRANSACTION_MAX_PROCESS_TIME_MS`` since ``pass_start`` (the walk
    stops). The walk goes on at the first millisecond either holds.

    pre: 0 <= pass_start <= 10 ** 13
    pre: -10 ** 13 <= born <= 10 ** 13
    pre: 0 <= immunity_ms <= 10 ** 9
    post: __return__ - born > immunity_ms or __return__ - pass_start > TRANSACTION_MAX_PROCESS_TIME_MS
    post: __return__ - 1 - born <= immunity_ms and __return__ - 1 - pass_start <= TRANSACTION_MAX_PROCESS_TIME_MS
    """
    return min(born + immunity_ms + 1, pass_start + TRANSACTION_MAX_PROCESS_TIME_MS + 1)
