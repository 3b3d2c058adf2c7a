"""The offset_commit lockstep machine's admin requests: rules that send them, the spec action each one is when a
broker handles it, and its answer read back as the spec's ``Answer`` rows (OFF-7, OFF-25, OFF-27 .. OFF-30).

A rule sends the request from an admin tool's client and waits for the answer; the broker's hook notes when it
handles it, and the replay drives the spec's action at that moment (``admin_action``), so that the spec answers
from the state the broker answered from.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from offset_lockstep_support import loads_fastjson

from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import loads_lenient
from rocketspec.refimpl.runtime import SIMULATED_EPOCH_MS
from rocketspec.spec import offset_commit as spec
from rocketspec.spec.protocol import RESET_OFFSET_CLIENT_WAIT_MS, LanguageCode, RequestCode, ResponseCode
from rocketspec.spec.queues import MessageQueue

GROUP = "CG"
CLONE = "CG_COPY"
ADMIN = "admin-tool"
ADMIN_CODES = (
    RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
    RequestCode.GET_CONSUME_STATS, RequestCode.GET_BROKER_CONSUME_STATS, RequestCode.GET_ALL_CONSUMER_OFFSET,
    RequestCode.QUERY_CONSUME_TIME_SPAN, RequestCode.GET_CONSUMER_CONNECTION_LIST,
    RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, RequestCode.CLONE_GROUP_OFFSET,
    RequestCode.DELETE_SUBSCRIPTIONGROUP,
)
# resetOffsetByTime's timestamps: -1 (the max offset), before every message, between messages, after all.
RESET_TIMES = (-1, 0, SIMULATED_EPOCH_MS + 1_000, SIMULATED_EPOCH_MS + 10**9)


def answer(request: str, code: int, rows: Any = (), total: int | None = None) -> spec.Answer:
    return spec.Answer(request, code, tuple(sorted(rows, key=repr)) if rows else (), total)


class AdminRules:
    """Mixed into the machine, which provides ``cluster``, ``admin``, ``spec_config``, ``state``, ``drive``,
    ``can``, ``_replay``, ``_settle``, ``_slot`` and ``_queue``."""

    cluster: Any
    admin: Any
    spec_config: spec.Config
    system_answer: spec.Answer | None

    def _broker(self, index: int) -> str:
        names = sorted(self.cluster.broker_names)
        return str(names[index % len(names)])

    def _ask(self, broker: str, code: int, fields: dict[str, Any], *, tool: bool = False) -> RemotingCommand:
        """Send an admin request and wait for its answer (``tool``: from the other admin client, whose requests are
        no spec actions)."""
        self._replay()  # type: ignore[attr-defined]
        return self._send(broker, RemotingCommand.request(code, fields), tool=tool)

    def _send(self, broker: str, request: RemotingCommand, *, tool: bool = False) -> RemotingCommand:
        cluster = self.cluster
        client = self.tools if tool else self.admin  # type: ignore[attr-defined]
        future = client.invoke(cluster.brokers[broker].addr, request, 20_000)
        return cluster.runtime.wait(future, 30_000)

    def _topic_queue(self, index: int) -> tuple[int, MessageQueue]:
        queues = self.spec_config.queues
        queue = index % len(queues)
        return queue, queues[queue]

    # ------------------------------------------------------------------------------------------------ rules
    @precondition(lambda self: self.cluster is not None)
    @rule(which=st.sampled_from(("every report", "every report", "stats", "stats of the topic", "broker stats",
                                 "all offsets", "time span", "connections", "consumer status", "query", "clone",
                                 "delete group")),
          broker=st.integers(0, 2), queue=st.integers(0, 8))
    def admin_reports(self, which: str, broker: int, queue: int) -> None:
        """An admin tool asks a broker for the group's offsets or clients (OFF-7, OFF-27, OFF-28, OFF-29): one report,
        or every one (each answer compared as it comes), or clones the group's offsets or deletes the group with its
        offsets (OFF-30)."""
        reports = {"stats": lambda: self.consume_stats_asked(broker, False),
                   "stats of the topic": lambda: self.consume_stats_asked(broker, True),
                   "broker stats": lambda: self.broker_consume_stats_asked(broker),
                   "all offsets": lambda: self.all_offsets_asked(broker),
                   "time span": lambda: self.time_span_asked(broker),
                   "connections": lambda: self.connections_asked(broker),
                   "consumer status": lambda: self.consumer_status_asked(broker),
                   "query": lambda: self.admin_queries_offset(queue)}
        if which == "every report":
            for name, report in reports.items():
                report()
                self.compare(name)  # type: ignore[attr-defined]
        elif which in ("clone", "delete group"):
            self.admin_changes_group(which == "clone", broker)
        else:
            reports[which]()

    def admin_changes_group(self, clone: bool, broker: int) -> None:
        """An admin tool clones the group's offsets or deletes the group with its offsets (OFF-30)."""
        if clone:
            self.offsets_cloned(broker)
        else:
            self.group_deleted(broker)

    @precondition(lambda self: self.cluster is not None)
    @rule(which=st.sampled_from(("producers", "running info", "consume directly", "subscription groups",
                                 "without fields", "unknown names", "order topics")), broker=st.integers(0, 2),
          slot=st.integers(0, 1))
    def admin_tool_asks(self, which: str, broker: int, slot: int) -> None:
        """The other requests of mqadmin's consumer commands, and the offset requests without their fields or with
        names the broker does not know (4.9.8's answers: its NullPointerExceptions are SYSTEM_ERROR). Not spec
        actions (they change and report no offset); each answer is checked on the spot."""
        name = self._broker(broker)
        client = f"127.0.0.1@c{slot}"
        online = name in self.state.clients[slot].online and self.state.clients[slot].alive  # type: ignore[attr-defined]
        expect: list[tuple[int, dict[str, Any], Any]] = []
        if which == "producers":
            response = self._ask(name, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "PG"}, tool=True)
            # Known once the producer's heartbeat reached the broker (again, after a restart).
            if response.code == ResponseCode.SUCCESS:
                ids = [c["clientId"] for c in loads_fastjson(response.body)["connectionSet"]]
                assert ids == [self.producer.instance.client_id], ids  # type: ignore[attr-defined]
            expect = [(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "NOPE"},
                       ResponseCode.SYSTEM_ERROR),
                      (RequestCode.GET_PRODUCER_CONNECTION_LIST, {}, ResponseCode.SYSTEM_ERROR)]
        elif which in ("running info", "consume directly"):
            # Forwarded to an online client of the group, whose answer comes back as it is; else SYSTEM_ERROR.
            code = RequestCode.GET_CONSUMER_RUNNING_INFO
            if which == "consume directly":
                code = RequestCode.CONSUME_MESSAGE_DIRECTLY
            fields = {"consumerGroup": GROUP, "clientId": client, "msgId": "7F0000017EBE3CEB3FFD000000000000"}
            response = self._ask(name, code, fields, tool=True)
            forwarded = which == "running info" and online
            assert (response.code != ResponseCode.SYSTEM_ERROR) == forwarded, (which, online, response)
            expect = [(code, {"clientId": client, "msgId": "00"}, ResponseCode.SYSTEM_ERROR)]
        elif which == "subscription groups":
            self._replay()  # type: ignore[attr-defined]
            self.drive(spec.OtherGroupUpdated(name), "another group's settings written")  # type: ignore[attr-defined]
            config = {"groupName": "CG_TOOLS", "consumeEnable": True, "retryQueueNums": 1}
            request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
                                              json.dumps(config).encode())
            response = self._send(name, request, tool=True)
            listed = json.loads(self._ask(name, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {}, tool=True).body
                                or b"{}")
            assert response.code == ResponseCode.SUCCESS and "CG_TOOLS" in listed["subscriptionGroupTable"]
            for body, answer_code in ((None, ResponseCode.SYSTEM_ERROR), (b"null", ResponseCode.SUCCESS),
                                      (b'{"retryQueueNums": 1}', ResponseCode.SYSTEM_ERROR)):
                request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
                assert self._send(name, request, tool=True).code == answer_code, body
        elif which == "without fields":
            scanned = any(q.stored != spec.NO_OFFSET or q.cloned != spec.NO_OFFSET
                          for i, q in enumerate(self.state.queues) if i in self.spec_config.on(name))  # type: ignore[attr-defined]
            expect = [
                (RequestCode.GET_CONSUME_STATS, {}, ResponseCode.SYSTEM_ERROR if scanned else ResponseCode.SUCCESS),
                (RequestCode.GET_CONSUME_STATS, {"topic": spec.TOPIC}, ResponseCode.SYSTEM_ERROR),
                (RequestCode.QUERY_CONSUME_TIME_SPAN, {"group": GROUP}, ResponseCode.SYSTEM_ERROR),
                (RequestCode.GET_CONSUMER_CONNECTION_LIST, {}, ResponseCode.SYSTEM_ERROR),
                (RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {"group": GROUP, "timestamp": 0},
                 ResponseCode.SYSTEM_ERROR),
                (RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": spec.TOPIC}, ResponseCode.SYSTEM_ERROR),
                (RequestCode.DELETE_SUBSCRIPTIONGROUP, {}, ResponseCode.SYSTEM_ERROR),
                (RequestCode.CLONE_GROUP_OFFSET, {"destGroup": CLONE, "topic": spec.TOPIC}, ResponseCode.SUCCESS),
                (RequestCode.CLONE_GROUP_OFFSET, {"destGroup": CLONE},
                 ResponseCode.SYSTEM_ERROR if scanned else ResponseCode.SUCCESS),
            ]
        elif which == "unknown names":
            expect = [
                (RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "NoSuchTopic", "group": GROUP},
                 ResponseCode.TOPIC_NOT_EXIST),
                (RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": "NoSuchTopic", "group": GROUP, "timestamp": 0},
                 ResponseCode.SYSTEM_ERROR),
                (RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": spec.TOPIC, "group": "NOPE"},
                 ResponseCode.SYSTEM_ERROR),
                (RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "NOPE"}, ResponseCode.CONSUMER_NOT_ONLINE),
                (RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP, "topic": "NoSuchTopic"}, ResponseCode.SUCCESS),
            ]
        else:  # order topics: the group's topics are not ordered, so brokerConsumeStats -o lists it with no stats
            answer = self._ask(name, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": True}, tool=True)
            body = loads_fastjson(answer.body)
            assert all(not entry.get(GROUP) for entry in body["consumeStatsList"]) and body["totalDiff"] == 0, body
        for request_code, fields, answer_code in expect:
            got = self._ask(name, request_code, fields, tool=True)
            assert got.code == answer_code, (which, RequestCode(request_code).name, fields, got.code, got.remark)
        self._settle()  # type: ignore[attr-defined]

    # ------------------------------------------------------------------------------------------------ changes
    @precondition(lambda self: self.cluster is not None)
    @rule(queue=st.integers(0, 8), to=st.sampled_from(("start", "middle", "end")))
    def admin_commits(self, queue: int, to: str) -> None:
        """``updateConsumeOffset``: an admin commits an offset of one queue (OFF-30, OFF-8)."""
        index, mq = self._topic_queue(queue)
        end = self.state.queues[index].max_offset  # type: ignore[attr-defined]
        offset = {"start": 0, "middle": end // 2, "end": end}[to]
        response = self._ask(mq.broker_name, RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": GROUP, "topic": mq.topic, "queueId": mq.queue_id, "commitOffset": offset})
        self.system_answer = answer("UPDATE_CONSUMER_OFFSET", response.code)
        self._settle()  # type: ignore[attr-defined]

    def admin_queries_offset(self, queue: int) -> None:
        """QUERY_CONSUMER_OFFSET from an admin tool (OFF-7)."""
        _index, mq = self._topic_queue(queue)
        response = self._ask(mq.broker_name, RequestCode.QUERY_CONSUMER_OFFSET,
                             {"consumerGroup": GROUP, "topic": mq.topic, "queueId": mq.queue_id})
        offset = int(response.field("offset") or -1) if response.code == ResponseCode.SUCCESS else -1
        self.system_answer = answer("QUERY_CONSUMER_OFFSET", response.code, ((offset,),))
        self._settle()  # type: ignore[attr-defined]

    @precondition(lambda self: self.cluster is not None)
    @rule(broker=st.integers(0, 2), timestamp=st.sampled_from(RESET_TIMES), force=st.booleans(), cpp=st.booleans(),
          accepted=st.booleans())
    def offsets_reset_by_time(self, broker: int, timestamp: int, force: bool, cpp: bool, accepted: bool) -> None:
        """``resetOffsetByTime`` at one broker: the offsets at the time, then the clients drop and reset their
        queues (OFF-25, OFF-26); asked by a C++ tool, the clients get the offsets as a list. One reset at a time;
        ``accepted``: only when the spec expects the broker to accept it."""
        name = self._broker(broker)
        action = spec.OffsetResetAsked(name, timestamp, force)
        if not self.can(action):  # type: ignore[attr-defined]
            return
        if accepted:
            answer_ = spec.step(self.state, action).answer  # type: ignore[attr-defined]
            if answer_ is None or answer_.code != ResponseCode.SUCCESS:
                return
        self._replay()  # type: ignore[attr-defined]
        fields = {"topic": spec.TOPIC, "group": GROUP, "timestamp": timestamp, "isForce": force}
        response = self._send(name, RemotingCommand.request(
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields,
            language=LanguageCode.CPP if cpp else LanguageCode.JAVA))
        rows: tuple[tuple[int, int], ...] = ()
        if response.code == ResponseCode.SUCCESS:
            table = loads_fastjson(response.body)["offsetTable"]
            rows = tuple((self._queue(mq), offset) for mq, offset in table.items())  # type: ignore[attr-defined]
        self.system_answer = answer("INVOKE_BROKER_TO_RESET_OFFSET", response.code, rows)
        # The tool waits for the clients' resets (RESET_OFFSET_CLIENT_WAIT_MS) before it reports.
        self._settle(RESET_OFFSET_CLIENT_WAIT_MS + 1_000 if accepted else 1_000)  # type: ignore[attr-defined]

    def offsets_cloned(self, broker: int) -> None:
        """``cloneGroupOffset`` of the topic to another group (OFF-30)."""
        response = self._ask(self._broker(broker), RequestCode.CLONE_GROUP_OFFSET,
                             {"srcGroup": GROUP, "destGroup": CLONE, "topic": spec.TOPIC, "offline": False})
        self.system_answer = answer("CLONE_GROUP_OFFSET", response.code)
        self._settle()  # type: ignore[attr-defined]

    def group_deleted(self, broker: int) -> None:
        """``deleteSubGroup`` with removeOffset: the group's offsets on the broker go (OFF-30)."""
        response = self._ask(self._broker(broker), RequestCode.DELETE_SUBSCRIPTIONGROUP,
                             {"groupName": GROUP, "removeOffset": True})
        self.system_answer = answer("DELETE_SUBSCRIPTIONGROUP", response.code)
        self._settle()  # type: ignore[attr-defined]

    # ------------------------------------------------------------------------------------------------ reports
    def _stats_rows(self, stats: dict[str, Any]) -> list[tuple[object, ...]]:
        return [(mq.topic, mq.queue_id, row["brokerOffset"], row["consumerOffset"], row["lastTimestamp"])
                for mq, row in stats["offsetTable"].items()]

    def consume_stats_asked(self, broker: int, asked: bool) -> None:
        """``consumerProgress``: GET_CONSUME_STATS for the topic, or every topic of the group (OFF-27)."""
        fields = {"consumerGroup": GROUP, **({"topic": spec.TOPIC} if asked else {})}
        response = self._ask(self._broker(broker), RequestCode.GET_CONSUME_STATS, fields)
        self.system_answer = answer("GET_CONSUME_STATS", response.code,
                                    self._stats_rows(loads_fastjson(response.body)))
        self._settle()  # type: ignore[attr-defined]

    def broker_consume_stats_asked(self, broker: int) -> None:
        """``brokerConsumeStats``: GET_BROKER_CONSUME_STATS, the group's rows and the broker's total lag (OFF-27)."""
        response = self._ask(self._broker(broker), RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": False})
        body = loads_fastjson(response.body)
        rows: list[tuple[object, ...]] = []
        for entry in body["consumeStatsList"]:
            for stats in entry.get(GROUP, ()):
                rows.extend(self._stats_rows(stats))
        self.system_answer = answer("GET_BROKER_CONSUME_STATS", response.code, rows, body["totalDiff"])
        self._settle()  # type: ignore[attr-defined]

    def all_offsets_asked(self, broker: int) -> None:
        """GET_ALL_CONSUMER_OFFSET: the broker's table (OFF-27)."""
        response = self._ask(self._broker(broker), RequestCode.GET_ALL_CONSUMER_OFFSET, {})
        rows: list[tuple[str, str, int, int]] = []
        for key, queues in loads_lenient(response.body or b"{}")["offsetTable"].items():
            topic, _sep, group = key.rpartition("@")
            label = {GROUP: "group", CLONE: "clone"}.get(group)
            if label is not None:
                rows.extend((label, topic, int(qid), offset) for qid, offset in queues.items())
        self.system_answer = answer("GET_ALL_CONSUMER_OFFSET", response.code, rows)
        self._settle()  # type: ignore[attr-defined]

    def time_span_asked(self, broker: int) -> None:
        """``queryConsumeTimeSpan``: QUERY_CONSUME_TIME_SPAN of the topic (OFF-28)."""
        response = self._ask(self._broker(broker), RequestCode.QUERY_CONSUME_TIME_SPAN,
                             {"topic": spec.TOPIC, "group": GROUP})
        spans = loads_fastjson(response.body).get("consumeTimeSpanSet", [])
        rows = [(s["messageQueue"]["queueId"], s["minTimeStamp"], s["maxTimeStamp"], s["consumeTimeStamp"],
                 s["delayTime"]) for s in spans]
        self.system_answer = answer("QUERY_CONSUME_TIME_SPAN", response.code, rows)
        self._settle()  # type: ignore[attr-defined]

    def connections_asked(self, broker: int) -> None:
        """``consumerConnection``: GET_CONSUMER_CONNECTION_LIST (OFF-29)."""
        response = self._ask(self._broker(broker), RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": GROUP})
        rows: list[tuple[object, ...]] = []
        if response.code == ResponseCode.SUCCESS:
            body = loads_fastjson(response.body)
            rows.append(("settings", body["messageModel"], body["consumeFromWhere"]))
            rows.extend(("client", self._slot(c["clientId"])) for c in body["connectionSet"])  # type: ignore[attr-defined]
        self.system_answer = answer("GET_CONSUMER_CONNECTION_LIST", response.code, rows)
        self._settle()  # type: ignore[attr-defined]

    def consumer_status_asked(self, broker: int) -> None:
        """``getConsumerStatus``: INVOKE_BROKER_TO_GET_CONSUMER_STATUS, each online client's memory offsets of the
        topic (OFF-29)."""
        response = self._ask(self._broker(broker), RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                             {"topic": spec.TOPIC, "group": GROUP})
        rows: list[tuple[object, ...]] = []
        if response.code == ResponseCode.SUCCESS:
            for client, table in loads_fastjson(response.body)["consumerTable"].items():
                rows.extend((self._slot(client), self._queue(mq), offset)  # type: ignore[attr-defined]
                            for mq, offset in table.items())
        self.system_answer = answer("INVOKE_BROKER_TO_GET_CONSUMER_STATUS", response.code, rows)
        self._settle()  # type: ignore[attr-defined]

    # ------------------------------------------------------------------------------------------------ replay
    def admin_action(self, broker: str, code: int, fields: dict[str, str], ts_ms: int) -> spec.Action | None:
        """The spec action an admin request is as its broker handles it."""
        def queue() -> int:
            mq = MessageQueue(fields.get("topic", ""), broker, int(fields.get("queueId", "0")))
            found = self._queue(mq)  # type: ignore[attr-defined]
            assert found is not None, mq
            return int(found)

        actions: dict[int, Any] = {
            RequestCode.UPDATE_CONSUMER_OFFSET: lambda: spec.AdminCommit(queue(), int(fields["commitOffset"])),
            RequestCode.QUERY_CONSUMER_OFFSET: lambda: spec.OffsetQueried(queue()),
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: lambda: spec.OffsetResetAsked(
                broker, int(fields["timestamp"]), fields.get("isForce") == "true"),
            RequestCode.GET_CONSUME_STATS: lambda: spec.ConsumeStatsAsked(broker, fields.get("topic")),
            RequestCode.GET_BROKER_CONSUME_STATS: lambda: spec.BrokerConsumeStatsAsked(broker),
            RequestCode.GET_ALL_CONSUMER_OFFSET: lambda: spec.AllOffsetsAsked(broker),
            RequestCode.QUERY_CONSUME_TIME_SPAN: lambda: spec.TimeSpanAsked(broker, fields["topic"], ts_ms),
            RequestCode.GET_CONSUMER_CONNECTION_LIST: lambda: spec.ConnectionsAsked(broker),
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: lambda: spec.ConsumerStatusAsked(broker),
            RequestCode.CLONE_GROUP_OFFSET: lambda: spec.OffsetsCloned(broker),
            RequestCode.DELETE_SUBSCRIPTIONGROUP: lambda: spec.GroupDeleted(broker),
        }
        make = actions.get(code)
        return None if make is None else make()
