"""Malformed requests get RocketMQ's error responses: no server raises, none answers with an internal exception."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.broker.config import BrokerConfig
from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.namesrv import NameServer
from rocketspec.refimpl.remoting import Network, RemotingCommand
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.refimpl.store import MemoryDisk
from rocketspec.spec.protocol import RequestCode, ResponseCode

# Field names the servers read, long and V2 forms.
FIELD_NAMES = [
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag",
    "properties", "reconsumeTimes", "unitMode", "batch", "maxReconsumeTimes", "consumerGroup", "queueOffset",
    "maxMsgNums", "commitOffset", "suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "offset",
    "timestamp", "group", "delayLevel", "originMsgId", "originTopic", "tranStateTableOffset", "commitLogOffset",
    "msgId", "transactionId", "commitOrRollback", "fromTransactionCheck", "clientID", "readQueueNums",
    "writeQueueNums", "perm", "brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId", "a", "b", "c",
    "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "acceptStandardJsonOnly", "compressed", "bodyCrc32",
]
FIELD_VALUES = st.one_of(
    st.sampled_from(["", "0", "-1", "1", "4", "8", "12", "TopicA", "%RETRY%CG", "%DLQ%CG", "*", "true", "false",
                     "99999999999999999999", "1.5", "CG", "PG", "TBW102", "7F00000100002A9F0000000000000000",
                     "TAGS\x01a\x02KEYS\x01k", "DELAY\x01x", "DELAY\x0199", "TRAN_MSG\x01true\x02PGROUP\x01PG"]),
    st.text(max_size=8),
)
BODIES = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.sampled_from([b"{}", b"[]", b"null", b'{"mqSet": 3}', b'{"consumerDataSet": [{}]}', b'{"clientID": 1}',
                     b'{"consumerGroup": "CG", "clientId": "c", "mqSet": [{"topic": 1}]}',
                     b'{"topicConfigSerializeWrapper": {"topicConfigTable": []}}', b"\xff\xfe"]),
)
CODES = st.one_of(st.sampled_from(list(RequestCode)), st.integers(min_value=-5, max_value=400))
INTERNAL = re.compile(r"^[A-Z]\w*(Error|Exception)\b")

requests = st.builds(
    lambda code, fields, body, oneway: RemotingCommand.request(code, fields, body, oneway=oneway),
    CODES,
    st.dictionaries(st.sampled_from(FIELD_NAMES), FIELD_VALUES, max_size=12),
    BODIES,
    st.booleans(),
)


class RecordingChannel:
    remote_addr = "127.0.0.1:50000"
    local_addr = "127.0.0.1:10911"
    active = True

    def __init__(self) -> None:
        self.sent: list[RemotingCommand] = []

    def send_response(self, response: RemotingCommand) -> None:
        self.sent.append(response)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        self.sent.append(request)

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> object:
        raise AssertionError("not expected")

    def close(self) -> None:
        self.active = False


def make_servers() -> tuple[SimulatedRuntime, Broker, NameServer]:
    runtime = SimulatedRuntime(seed=1)
    events = EventLog(runtime.now_ms, keep=False)
    network = Network(runtime, events)
    namesrv = NameServer(runtime, network, events)
    namesrv.start()
    broker = Broker(BrokerConfig(broker_name="broker-a"), runtime, network, events, namesrv.addr, disk=MemoryDisk())
    broker.start()
    broker.create_topic("TopicA", 4, 4, 6, False)
    heartbeat = {"clientID": "c", "producerDataSet": [{"groupName": "PG"}], "consumerDataSet": [
        {"groupName": "CG", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
         "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
         "subscriptionDataSet": [{"topic": "TopicA", "subString": "*", "tagsSet": [], "codeSet": [],
                                  "subVersion": 1, "classFilterMode": False, "expressionType": "TAG"}]}]}
    broker.handle(RemotingCommand.request(RequestCode.HEART_BEAT, {}, json.dumps(heartbeat).encode()),
                  RecordingChannel())
    runtime.advance(100)
    return runtime, broker, namesrv


RUNTIME, BROKER, NAMESRV = make_servers()


def check_answer(request: RemotingCommand, response: RemotingCommand | None) -> None:
    if request.is_oneway:
        assert response is None
        return
    if response is None:  # held (long polling): answered later through the channel
        # ... or, as by a 4.9.8 broker without ACL, never answered (admin_maintenance.get_broker_cluster_acl_info).
        assert request.code in (RequestCode.PULL_MESSAGE, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
        return
    assert response.is_response and response.opaque == request.opaque
    if response.code == ResponseCode.SYSTEM_ERROR:
        assert not INTERNAL.match(response.remark or ""), response.remark


@given(requests)
def test_broker_answers_every_request_with_a_protocol_response(request: RemotingCommand) -> None:
    channel = RecordingChannel()
    check_answer(request, BROKER.handle(request, channel))
    RUNTIME.advance(10)


@given(requests)
def test_name_server_answers_every_request_with_a_protocol_response(request: RemotingCommand) -> None:
    response = NAMESRV.handle(request, RecordingChannel())
    if request.code not in NAMESRV._handlers:  # 4.9.8's DefaultRequestProcessor answers unknown codes with nothing
        assert response is None
        return
    check_answer(request, response)
