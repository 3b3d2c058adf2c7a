"""Sensitivity of the broker cases for the name server, admin requests and send: each area's cases catch a reference
broker with one of its rules broken, and pass on the unbroken one.

Each test changes ONE refimpl rule (``refimpl_mutant`` swaps one function's code in place, or ``monkeypatch``) and
runs two selected cases on a served cluster with it (``tests/conformance_support.py``).
"""

from __future__ import annotations

import pytest
from conformance_support import Outcomes, expect_caught, unbroken_fixture
from mutation import refimpl_mutant

from rocketspec.refimpl import message, namesrv
from rocketspec.refimpl.broker import admin_topics, send

CASES = [
    "broker/namesrv/unregister-removes-route", "broker/namesrv/register-fake-broker-route",
    "broker/admin/create-topic", "broker/admin/delete-topic-in-broker",
    "broker/send/tag-hash-codes", "broker/send/queue-id-out-of-range", "broker/send/response-header",
]
unbroken = unbroken_fixture(CASES)


def test_namesrv_unregister_keeping_routes_is_caught(unbroken: Outcomes) -> None:
    """Broken NS-4: UNREGISTER_BROKER drops the broker's addresses but leaves its topics' queue data behind."""
    with refimpl_mutant(namesrv, "self._remove_topics_of(broker_name)", "pass"):
        expect_caught(unbroken, "broker/namesrv/unregister-removes-route", "broker/namesrv/register-fake-broker-route")


def test_admin_create_topic_read_queues_ignored_is_caught(unbroken: Outcomes) -> None:
    """Broken BRK-17: UPDATE_AND_CREATE_TOPIC stores writeQueueNums as the read queue count too."""
    with refimpl_mutant(admin_topics, 'read_queue_nums, write_queue_nums, perm = numbers["readQueueNums"]',
                        'read_queue_nums, write_queue_nums, perm = numbers["writeQueueNums"]'):
        expect_caught(unbroken, "broker/admin/create-topic", "broker/admin/delete-topic-in-broker")


def test_send_tags_code_not_java_hash_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken BRK-9: the store writes a tags code that is not String.hashCode of the tags (here: of the reversed
    tags), so "Aa" no longer has the code a subscription to "Aa" asks for."""

    def reversed_code(tags: str | None) -> int:
        return message.java_string_hash(tags[::-1]) if tags else 0

    monkeypatch.setattr(message, "tags_code", reversed_code)
    expect_caught(unbroken, "broker/send/tag-hash-codes", "broker/send/response-header")


def test_send_queue_id_bound_on_write_queues_is_caught(unbroken: Outcomes) -> None:
    """Broken BRK-3: the queueId bound is writeQueueNums instead of max(readQueueNums, writeQueueNums)."""
    with refimpl_mutant(send, "valid = max(topic_config.write_queue_nums, topic_config.read_queue_nums)",
                        "valid = topic_config.write_queue_nums"):
        expect_caught(unbroken, "broker/send/queue-id-out-of-range", "broker/send/response-header")
