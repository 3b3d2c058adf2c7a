"""Sensitivity of the broker cases for send-back, delay levels and transactions: each area's cases catch a reference
broker with one of its rules broken, and pass on the unbroken one.

Each test changes ONE refimpl rule (``monkeypatch`` of a refimpl function, or ``refimpl_mutant``'s one-substitution
edit of a refimpl module) and runs two selected cases on a served cluster (the short timers of ``SERVED_OPTIONS``) with
it (``tests/conformance_support.py``).
"""

from __future__ import annotations

import pytest
from conformance_support import Outcomes, expect_caught, unbroken_fixture
from mutation import refimpl_mutant

from rocketspec.refimpl.broker import schedule, sendback
from rocketspec.refimpl.broker.transaction import CheckedMessage, EndTransactionHeader, TransactionService
from rocketspec.refimpl.message import MessageExt
from rocketspec.spec.protocol import Property

CASES = [
    "broker/sendback/retry-delay-level", "broker/sendback/dlq-after-max", "broker/sendback/unknown-offset",
    "broker/delay/parked-in-level-queue", "broker/delay/delivered-after-delay",
    "broker/transaction/half-stored-in-half-topic", "broker/transaction/commit-visible",
    "broker/transaction/end-wrong-producer-group", "broker/transaction/check-max-then-discard",
]
unbroken = unbroken_fixture(CASES)


def test_sendback_default_level_ignoring_reconsume_times_is_caught(unbroken: Outcomes) -> None:
    """Broken RETRY-8: a send back with delayLevel 0 is always parked at level 3 (reconsumeTimes not added)."""
    with refimpl_mutant(sendback, "delay_level = 3 + original.reconsume_times", "delay_level = 3"):
        expect_caught(unbroken, "broker/sendback/retry-delay-level", "broker/sendback/unknown-offset")


def test_sendback_dlq_one_too_late_is_caught(unbroken: Outcomes) -> None:
    """Broken RETRY-7: the dead-letter switch needs reconsumeTimes > max instead of >= max."""
    with refimpl_mutant(sendback, "original.reconsume_times >= max_times", "original.reconsume_times > max_times"):
        expect_caught(unbroken, "broker/sendback/dlq-after-max", "broker/sendback/unknown-offset")


def test_delay_delivered_at_once_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken RETRY-3: every parked message counts as due at once (the level's delay is not waited)."""
    monkeypatch.setattr(schedule, "correct_deliver_timestamp", lambda now_ms, deliver_ms, level_delay_ms: now_ms)
    expect_caught(unbroken, "broker/delay/delivered-after-delay", "broker/delay/parked-in-level-queue")


def test_transaction_producer_group_unchecked_is_caught(unbroken: Outcomes,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken TXN-7: END_TRANSACTION does not compare the half message's PGROUP with the header's producerGroup."""
    original = TransactionService._check_prepare_message

    def lenient(half: MessageExt | None, header: EndTransactionHeader) -> str | None:
        if half is not None and half.properties.get(Property.PRODUCER_GROUP) is not None:
            header = EndTransactionHeader(half.properties[Property.PRODUCER_GROUP], header.tran_state_table_offset,
                                          header.commit_log_offset, header.commit_or_rollback, header.msg_id,
                                          header.transaction_id, header.from_transaction_check)
        return original(half, header)

    monkeypatch.setattr(TransactionService, "_check_prepare_message", staticmethod(lenient))
    expect_caught(unbroken, "broker/transaction/end-wrong-producer-group", "broker/transaction/commit-visible")


def test_transaction_never_discarded_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken TXN-15/23: transactionCheckMax is ignored: an unanswered half message is checked for ever."""
    original = TransactionService._need_discard

    def never(self: TransactionService, msg: CheckedMessage, check_max: int) -> bool:
        original(self, msg, 1 << 30)
        return False

    monkeypatch.setattr(TransactionService, "_need_discard", never)
    expect_caught(unbroken, "broker/transaction/check-max-then-discard", "broker/transaction/half-stored-in-half-topic")
