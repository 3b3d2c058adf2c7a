"""Broker conformance cases: long polling (PullRequestHoldService).

A pull with the suspend flag that would answer PULL_NOT_FOUND is held instead (PULL-13); it is answered once, when a
matching message arrives in its queue (PULL-14, PULL-15: only with longPollingEnable) or when the periodic check
finds its hold time (suspendTimeoutMillis, or shortPollingTimeMills without long polling) over. The check runs every
5 s with long polling, every shortPollingTimeMills otherwise (PULL-15), so the cases wait bounded multiples of those
(read from the target) and suspend for short times.
"""

from __future__ import annotations

import time

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import answer_within, bodies, consumer_offset, fill, setup
from rocketspec.conformance.broker.pull import expect_offsets
from rocketspec.conformance.context import BrokerContext, answer_text
from rocketspec.conformance.model import CaseList
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import LONG_POLLING_CHECK_INTERVAL_MS, ResponseCode

cases = CaseList("broker/longpoll")
CASES = cases.cases

# How long a case watches a held pull for an answer it must not get.
HELD_WATCH_S = 0.5
# Slack on top of the broker's own timers (scheduling, a busy shared broker).
SLACK_S = 3.0
# How soon after an arrival a held pull must be answered: the arrival wakes it at once (PULL-15), well before the
# periodic check (5 s) would.
ARRIVAL_WAKE_S = 2.0
# A suspend long enough that the periodic check never answers the pull during a case.
LONG_SUSPEND_MS = 20_000


def hold_check_s(ctx: BrokerContext) -> float:
    """The period of the broker's hold check (PULL-15)."""
    if ctx.setting_bool("longPollingEnable"):
        return LONG_POLLING_CHECK_INTERVAL_MS / 1000
    return ctx.setting_int("shortPollingTimeMills") / 1000


def held_pull(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int, offset: int,
              suspend_ms: int = LONG_SUSPEND_MS, **options: object) -> RemotingCommand:
    """Send a suspended pull and require that it is not answered within HELD_WATCH_S (less when the hold time is
    shorter); the request is returned."""
    request = requests.pull(group, topic, queue_id, offset, suspend_ms=suspend_ms, **options)  # type: ignore[arg-type]
    client.send(request)
    hold_ms = suspend_ms if ctx.setting_bool("longPollingEnable") else ctx.setting_int("shortPollingTimeMills")
    watch = min(HELD_WATCH_S, 0.8 * hold_ms / 1000)
    early = answer_within(client, request.opaque, watch)
    if early is not None:
        ctx.expect(False, f"the suspended pull at {topic}:{queue_id} offset {offset} held (no answer within "
                   f"{watch:g} s)", f"answered {answer_text(early)}")
    return request


def woken(ctx: BrokerContext, client: WireClient, request: RemotingCommand, topic: str, queue_id: int, body: bytes,
          tags: str | None = None) -> RemotingCommand:
    """Send a message to ``topic``:``queue_id`` (on a connection of its own) that must wake the held ``request``
    within ARRIVAL_WAKE_S; the answer, which must be SUCCESS."""
    ctx.send(ctx.broker(0), topic, body, queue_id, tags=tags)
    answer = answer_within(client, request.opaque, ARRIVAL_WAKE_S)
    ctx.expect(answer is not None, f"the held pull answered within {ARRIVAL_WAKE_S:g} s of a message to "
               f"{topic}:{queue_id}", "no answer")
    assert answer is not None
    ctx.expect_code(answer, ResponseCode.SUCCESS, "the woken pull")
    return answer


def need_long_polling(ctx: BrokerContext) -> None:
    if not ctx.setting_bool("longPollingEnable"):
        ctx.skip("longPollingEnable=false: message arrival does not wake held pulls (PULL-15)")


@cases.case("held-at-max", clauses=("PULL-13", "PULL-4"),
            requirement="a pull with the suspend flag at the queue's max offset is held, not answered at once")
def held_at_max(ctx: BrokerContext) -> None:
    """PULL-13: PULL_NOT_FOUND (offset == max) on a first processing with the suspend flag is held."""
    client, topic, group = setup(ctx, messages=2)
    held_pull(ctx, client, group, topic, 0, 2)


@cases.case("woken-by-new-message", clauses=("PULL-13", "PULL-14", "PULL-15"),
            requirement="a held pull is answered once, with SUCCESS and the new message, when a message arrives in "
                        "its queue")
def woken_by_new_message(ctx: BrokerContext) -> None:
    """PULL-14/15: on a master with long polling, an arrival past the held offset processes the request again
    (without suspension) and answers it, exactly once."""
    need_long_polling(ctx)
    client, topic, group = setup(ctx, messages=1)
    request = held_pull(ctx, client, group, topic, 0, 1)
    answer = woken(ctx, client, request, topic, 0, b"wake up")
    ctx.expect_equal(bodies(ctx, answer), [b"wake up"], "message bodies")
    expect_offsets(ctx, answer, 2, 0, 2)
    again = answer_within(client, request.opaque, HELD_WATCH_S)
    ctx.expect(again is None, "the held pull answered exactly once", "a second answer with the same opaque")


@cases.case("held-on-empty-queue", clauses=("PULL-2", "PULL-10", "PULL-13", "PULL-14"),
            requirement="a suspended pull at offset 0 of a queue never written is held and woken by the first "
                        "message")
def held_on_empty_queue(ctx: BrokerContext) -> None:
    """PULL-2/10: NO_MESSAGE_IN_QUEUE at offset 0 is PULL_NOT_FOUND, which PULL-13 holds; PULL-14 wakes it."""
    need_long_polling(ctx)
    client, topic, group = setup(ctx, queues=2)
    request = held_pull(ctx, client, group, topic, 1, 0)
    answer = woken(ctx, client, request, topic, 1, b"first")
    ctx.expect_equal(bodies(ctx, answer), [b"first"], "message bodies")


@cases.case("other-queue-does-not-wake", clauses=("PULL-14",),
            requirement="a message arriving in another queue of the topic does not answer a held pull")
def other_queue_does_not_wake(ctx: BrokerContext) -> None:
    """PULL-14: held requests are kept per topic@queueId; only their own queue's max offset passing wakes them."""
    need_long_polling(ctx)
    client, topic, group = setup(ctx, queues=2)
    request = held_pull(ctx, client, group, topic, 0, 0)
    producer = ctx.broker(0)
    ctx.send(producer, topic, b"queue 1", 1)
    early = answer_within(client, request.opaque, HELD_WATCH_S)
    if early is not None:
        ctx.expect(False, "no answer after a message to queue 1", f"answered {answer_text(early)}")
    answer = woken(ctx, client, request, topic, 0, b"queue 0")
    ctx.expect_equal(bodies(ctx, answer), [b"queue 0"], "message bodies")


@cases.case("expires-at-suspend-timeout", clauses=("PULL-13", "PULL-14", "PULL-15", "PULL-4"),
            requirement="a held pull that no message wakes is answered PULL_NOT_FOUND (next = its offset) once its "
                        "suspend time is over, at the next hold check")
def expires_at_suspend_timeout(ctx: BrokerContext) -> None:
    """PULL-13: held for suspendTimeoutMillis (shortPollingTimeMills without long polling); PULL-14/15: the periodic
    check (every 5 s, or shortPollingTimeMills) processes it again without suspension: OFFSET_OVERFLOW_ONE."""
    suspend_ms = 1000
    long_polling = ctx.setting_bool("longPollingEnable")
    hold_ms = suspend_ms if long_polling else ctx.setting_int("shortPollingTimeMills")
    client, topic, group = setup(ctx, messages=1)
    started = time.monotonic()
    request = held_pull(ctx, client, group, topic, 0, 1, suspend_ms=suspend_ms)
    limit = hold_ms / 1000 + hold_check_s(ctx) + SLACK_S
    answer = answer_within(client, request.opaque, limit)
    waited = time.monotonic() - started
    ctx.expect(answer is not None, f"an answer within {limit:g} s (hold {hold_ms} ms + check period)", "no answer")
    assert answer is not None
    ctx.expect(waited >= hold_ms / 1000 * 0.9, f"no answer before the hold time ({hold_ms} ms)",
               f"answered after {waited:.2f} s")
    ctx.expect_code(answer, ResponseCode.PULL_NOT_FOUND, "the expired pull")
    expect_offsets(ctx, answer, 1, 0, 1)


@cases.case("suspend-with-messages-answers-at-once", clauses=("PULL-13",),
            requirement="a pull with the suspend flag at an offset holding messages answers SUCCESS at once")
def suspend_with_messages(ctx: BrokerContext) -> None:
    """PULL-13: only PULL_NOT_FOUND is held."""
    client, topic, group = setup(ctx, messages=2)
    answer = client.request(requests.pull(group, topic, 0, 0, suspend_ms=LONG_SUSPEND_MS), timeout=2.0)
    ctx.expect_code(answer, ResponseCode.SUCCESS, "a suspended pull at offset 0 of 2")
    ctx.expect_equal(len(ctx.messages(answer)), 2, "messages in the answer")


@cases.case("offset-moved-not-held", clauses=("PULL-13", "PULL-5", "PULL-10"),
            requirement="a pull with the suspend flag above the max offset answers PULL_OFFSET_MOVED at once")
def offset_moved_not_held(ctx: BrokerContext) -> None:
    """PULL-13: PULL_OFFSET_MOVED (PULL-5/10) is never held."""
    client, topic, group = setup(ctx, messages=1)
    answer = client.request(requests.pull(group, topic, 0, 9, suspend_ms=LONG_SUSPEND_MS), timeout=2.0)
    ctx.expect_code(answer, ResponseCode.PULL_OFFSET_MOVED, "a suspended pull at offset 9 of max 1")


@cases.case("no-matched-not-held", clauses=("PULL-13", "PULL-9", "FILTER-2"),
            requirement="a suspended pull whose subscription matches none of the new messages answers "
                        "PULL_RETRY_IMMEDIATELY at once, nextBeginOffset past them")
def no_matched_not_held(ctx: BrokerContext) -> None:
    """PULL-9: a scan that only filters out entries is NO_MATCHED_MESSAGE → PULL_RETRY_IMMEDIATELY, not held."""
    client, topic, group = setup(ctx)
    fill(ctx, client, topic, 2, tags="b")
    answer = client.request(requests.pull(group, topic, 0, 0, subscription="a", suspend_ms=LONG_SUSPEND_MS),
                            timeout=2.0)
    ctx.expect_code(answer, ResponseCode.PULL_RETRY_IMMEDIATELY, "a suspended pull of tag a over two b messages")
    expect_offsets(ctx, answer, 2, 0, 2)


@cases.case("held-tag-pull-woken-by-match", clauses=("PULL-14", "FILTER-2"),
            requirement="a held pull subscribed to a tag is woken by a message with that tag and answers it")
def held_tag_pull_woken(ctx: BrokerContext) -> None:
    """PULL-14: an arrival whose tags code the subscription matches wakes the held pull."""
    need_long_polling(ctx)
    client, topic, group = setup(ctx, messages=1)
    request = held_pull(ctx, client, group, topic, 0, 1, subscription="a || c")
    answer = woken(ctx, client, request, topic, 0, b"tag c", tags="c")
    ctx.expect_equal([m.tags for m in ctx.messages(answer)], ["c"], "tags of the messages")


@cases.case("held-pull-commits-offset", clauses=("PULL-18", "OFF-10"),
            requirement="a held pull with the commit flag commits its commitOffset when first processed")
def held_pull_commits_offset(ctx: BrokerContext) -> None:
    """PULL-18: the commit happens on the first processing, whether or not the request is then held."""
    client, topic, group = setup(ctx, messages=3)
    held_pull(ctx, client, group, topic, 0, 3, commit=True, commit_offset=3)
    other = ctx.broker(0)
    ctx.expect_equal(consumer_offset(ctx, other, group, topic), 3, "the stored consumer offset while the pull is held")
