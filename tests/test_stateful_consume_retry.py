"""Lockstep: the consume_retry spec (RETRY-*) drives the reference implementation's concurrent consumer and broker.

The machine is ``retry_lockstep.RetryLockstep`` (see there: the drawn configuration, the driven and observed actions,
the projections), drawn mostly concurrent: messages sent alone or in batches (pulled together, cut into consume
requests of consumeMessageBatchMaxSize), a listener answering each delivery as the message's plan says (success,
RECONSUME_LATER with context delay level 0 / 1 / -1, an exception, ``null``, CONSUME_SUCCESS with ackIndex just before
the message; as a status, its name or without a context; taking simulated time), faults on CONSUMER_SEND_MSG_BACK
(the consumer sends the message itself) and on that own send (a retried attempt without its count, or a local
re-consume after 5 s), the broker's send back, the schedule service's delay levels from the drawn
``messageDelayLevel``, a clean broker restart, the retry and DLQ topics and the committed offsets, compared after every
step; at the end the consumer shuts down and its offsets are on the broker.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from lockstep import machine_test, variant_caught, variant_needs
from retry_lockstep import RetryLockstep

from rocketspec.refimpl.broker import schedule, sendback
from rocketspec.refimpl.client import consume_service, consumer_config
from rocketspec.refimpl.store import writing


class ConsumeRetryMachine(RetryLockstep):
    """A consumer of G (mostly concurrent) and the broker's retry chain, stepped with the spec (RETRY-1..30)."""

    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {
        "consumer.orderly": st.sampled_from((False, False, False, True)),
    }


test_consume_retry_machine = machine_test(ConsumeRetryMachine, 60, 30)


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 60, 25
#: The slow tier's variants: the orderly one needs more programs (orderly is drawn one time in four).
VARIANT_EXAMPLES = 120
# Each breaks one rule of the implementation; the machine must find a failing program (and name the clause).
MUTANTS = {
    "dlq_threshold_off_by_one": (
        sendback, "if original.reconsume_times >= max_times or delay_level < 0:",
        "if original.reconsume_times > max_times or delay_level < 0:", ("RETRY-7",)),
    "retry_delay_level_2_plus_n": (
        sendback, "delay_level = 3 + original.reconsume_times", "delay_level = 2 + original.reconsume_times",
        ("RETRY-8", "RETRY-2")),
    "failed_message_acknowledged": (
        consume_service, "        else:\n            ack_index = -1\n",
        "        else:\n            ack_index = len(msgs) - 1\n", ("RETRY-13",)),
    "schedule_delivers_a_level_early": (
        schedule, "countdown = correct_deliver_timestamp(now, tags_code, level_delay) - now",
        "countdown = correct_deliver_timestamp(now, tags_code - 1000, level_delay) - now", ("RETRY-3",)),
    "restart_forgets_the_schedule_offsets": (
        schedule, "                    self.offset_table[level] = offset\n", "                    pass\n",
        ("RETRY-32",)),
    "local_reconsume_too_soon": (
        consume_service, "self.runtime.call_later(SEND_BACK_LOCAL_RETRY_DELAY_MS, again)",
        "self.runtime.call_later(1_000, again)", ("RETRY-17", "RETRY-26")),
    "local_reconsume_keeps_the_properties": (
        consume_service, "reconsume_times=msgs[i].reconsume_times + 1, properties=shared[i])",
        "reconsume_times=msgs[i].reconsume_times + 1)", ("RETRY-30",)),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(ConsumeRetryMachine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)


# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS = {
    "broker.messageDelayLevel": (
        writing, "level = min(level, len(self.delay_level_millis))", "level = min(level, 18)",
        ("RETRY-1", "RETRY-2")),
    "consumer.maxReconsumeTimes": (
        consumer_config, "return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times", "return 16",
        ("RETRY-7", "RETRY-22")),
    "consumer.consumeMessageBatchMaxSize": (
        consume_service, "size = self.config.consume_message_batch_max_size", "size = 1", ("RETRY-28",)),
    "consumer.orderly": (
        consume_service, "            suspend = True\n            updated.append(attrs.evolve(msg, reconsume_times="
        "msg.reconsume_times + 1))\n", "            suspend = True\n            updated.append(msg)\n",
        ("RETRY-21",)),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(ConsumeRetryMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(ConsumeRetryMachine, dimension, module, old, new, clauses, examples=VARIANT_EXAMPLES,
                  steps=MUTANT_STEPS)
