"""Lockstep: orderly consumption's limits (RETRY-21, RETRY-22, RETRY-23, RETRY-24, RETRY-29, RETRY-30) drive refimpl.

The machine is ``retry_lockstep.RetryLockstep`` (see there: the drawn configuration, the driven and observed actions,
the projections), drawn mostly orderly, over two queues of ``T``: batches of min(consumeMessageBatchMaxSize, pulled)
taken in offset order from the first unfinished message, the listener's SUSPEND_CURRENT_QUEUE_A_MOMENT (or an exception
or ``null``; as a status, its name, a concurrent status or without a context; taking simulated time, past the loop's
60 s) with the context's suspendCurrentQueueTimeMillis left at -1 or set (clamped to [10, 30000] ms), +1 for each
message of a suspended batch, the dead-letter send of a message at the limit (maxReconsumeTimes; -1 is
Integer.MAX_VALUE) with its faults (every attempt fails: +1, suspended again; the first fails: a retry copy without its
count), the property map that send shares with the message (RETRY-30), parked dead letters moved to %DLQ%G by the
schedule service on the drawn delay table, and the committed offsets, compared after every step; at the end the
consumer shuts down: its offsets are on the broker, its queue locks released.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from dimensions import DELAY_TABLES
from hypothesis import strategies as st
from lockstep import machine_test, variant_caught, variant_needs
from retry_lockstep import RetryLockstep

from rocketspec.refimpl.client import consume_service, consumer_config
from rocketspec.refimpl.store import writing


class OrderlyMachine(RetryLockstep):
    """An orderly consumer of G (mostly) on two queues, stepped with the spec (RETRY-21..24, RETRY-29, RETRY-30)."""

    QUEUES: ClassVar[int] = 2
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {
        # Hypothesis draws the first value most: orderly, and limits that dead-letter soon.
        "consumer.orderly": st.sampled_from((True, True, True, False)),
        "consumer.maxReconsumeTimes": st.sampled_from((0, 1, 2, 3, -1, 17)),
        # Dead letters wait in the schedule topic for their level: tables whose levels stay within hours.
        "broker.messageDelayLevel": st.sampled_from(tuple(t for t in DELAY_TABLES if "d" not in t)),
    }


test_orderly_machine = machine_test(OrderlyMachine, 40, 30)


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 100, 25
# Each breaks one rule of ConsumeMessageOrderlyService; the machine must find a program that shows it.
MUTANTS = {
    "suspension_not_cut_to_30_s": (
        consume_service, "delay = min(max(delay, 10), 30_000)", "delay = max(delay, 10)", ("RETRY-24",)),
    "suspended_message_not_counted": (
        consume_service, "            suspend = True\n            updated.append(attrs.evolve(msg, reconsume_times="
        "msg.reconsume_times + 1))\n", "            suspend = True\n            updated.append(msg)\n",
        ("RETRY-21",)),
    "dead_letter_sent_with_n_plus_1": (
        consume_service, "self.consumer.send_orderly_message_back(msg, limit, props)",
        "self.consumer.send_orderly_message_back(attrs.evolve(msg, reconsume_times=msg.reconsume_times + 1), "
        "limit, props)", ("RETRY-23", "RETRY-30")),  # the count shows in the copy and in the shared DELAY
    "queue_not_blocked_while_suspended": (
        consume_service, "context.suspend_current_queue_time_ms)\n                result.set_result(False)",
        "context.suspend_current_queue_time_ms)\n                result.set_result(True)", ("RETRY-24", "RETRY-29")),
    "failed_dead_letter_send_not_counted": (
        consume_service, "                        suspend = True\n                        updated.append(attrs.evolve("
        "msg, reconsume_times=msg.reconsume_times + 1))", "                        suspend = True\n"
        "                        updated.append(msg)", ("RETRY-21",)),
    "concurrent_later_taken_as_success": (
        consume_service, "        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT\n",
        "        return ConsumeOrderlyStatus.SUCCESS\n", ("RETRY-21",)),
    "dead_letter_keeps_its_own_properties": (
        consume_service, "                    msg = attrs.evolve(msg, properties=dict(props))\n",
        "", ("RETRY-30",)),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(OrderlyMachine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)


# ------------------------------------------------------------------------------------------ configuration variants
VARIANTS = {
    "broker.messageDelayLevel": (
        writing, "level = min(level, len(self.delay_level_millis))", "level = min(level, 18)",
        ("RETRY-1", "RETRY-2")),
    "consumer.maxReconsumeTimes": (
        consumer_config, "return 2**31 - 1 if self.max_reconsume_times == -1 else self.max_reconsume_times",
        "return 2**31 - 1", ("RETRY-21", "RETRY-22")),
    "consumer.consumeMessageBatchMaxSize": (
        consume_service, "msgs = pq.take_messages(self.config.consume_message_batch_max_size)",
        "msgs = pq.take_messages(1)", ("RETRY-29",)),
    "consumer.orderly": (
        consume_service, "            suspend = True\n            updated.append(attrs.evolve(msg, reconsume_times="
        "msg.reconsume_times + 1))\n", "            suspend = True\n            updated.append(msg)\n",
        ("RETRY-21",)),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(OrderlyMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(OrderlyMachine, dimension, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)
