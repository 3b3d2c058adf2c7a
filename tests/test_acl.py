"""Plain ACL (``refimpl/acl*.py``): the file, white addresses, the signature, the decisions, and `serve --acl`.

The refusal texts are those of a real 4.9.8 broker with ``aclEnable=true`` (pinned in acl_support.REAL_ANSWERS;
tests/test_acl_real.py compares with the live broker). The signature known answers were computed once with the real
Java ``AclClientRPCHook`` (a 20-line program over ``lib/*`` of the 4.9.8 installation).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from acl_support import (
    ACL_YML,
    ADMIN_AK,
    ADMIN_SK,
    ALLOWED_TOPIC,
    DENIED_TOPIC,
    NO_ACCESS_KEY,
    PUB_ONLY_TOPIC,
    REAL_ANSWERS,
    USER_AK,
    USER_SK,
    bad_signature,
    heartbeat_body,
    probe_requests,
    sign,
)

from rocketspec.conformance import requests as rq
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.acl import (
    ACL_EXCEPTION,
    PlainAccessValidator,
    check_permission,
    java_hashmap_order,
    needed_resources,
)
from rocketspec.refimpl.acl_address import address_pattern
from rocketspec.refimpl.acl_config import AclFileError, load_acl_file, parse_acl_config
from rocketspec.refimpl.acl_signature import acl_content, signed_fields
from rocketspec.refimpl.client.config import ClientConfig
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError
from rocketspec.refimpl.cluster import Cluster
from rocketspec.refimpl.message import Message, MessageExt
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import ServedCluster
from rocketspec.spec.protocol import AclPerm, ConsumeStatus, RequestCode, ResponseCode

CLI = [sys.executable, "-m", "rocketspec"]


@pytest.fixture(scope="module")
def acl_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("acl") / "plain_acl.yml"
    path.write_text(ACL_YML)
    return path


# ---------------------------------------------------------------------------------------------------------- the file
def test_a_good_file_is_read_as_4_9_8_reads_it(acl_file: Path) -> None:
    config = load_acl_file(acl_file)
    assert config.global_white_addresses == ("10.10.103.*",)
    user, admin = config.accounts[USER_AK], config.accounts[ADMIN_AK]
    assert (user.secret_key, user.admin, user.white_remote_address) == (USER_SK, False, None)
    assert (user.default_topic_perm, user.default_group_perm) == (AclPerm.DENY, AclPerm.SUB)
    assert user.resource_perms == {"%RETRY%AclGroupDenied": AclPerm.DENY, ALLOWED_TOPIC: AclPerm.PUB | AclPerm.SUB,
                                   PUB_ONLY_TOPIC: AclPerm.PUB, DENIED_TOPIC: AclPerm.DENY}
    # No lists: None (an admin account is then allowed everything); missing default perms are DENY.
    assert admin.admin and admin.resource_perms is None and admin.default_topic_perm == AclPerm.DENY
    assert config.is_global_white("10.10.103.7") and not config.is_global_white("127.0.0.1")
    assert parse_acl_config(None).accounts == {}


@pytest.mark.parametrize(("text", "problem"), [
    ("accounts: [", "is not YAML at line 1:"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: [\n", "is not YAML at line 4:"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: 12345678\n  topicPerms: [' =PUB']\n",
     "accounts[0].topicPerms[0] must be NAME=PERM"),
    ("- a\n- b\n", "must be a mapping"),
    ("acounts: []\n", "unknown key(s) acounts"),
    ("accounts:\n- accessKey: short\n  secretKey: 12345678\n", "accounts[0].accessKey must be longer than 6"),
    ("accounts:\n- accessKey: RocketMQ\n", "accounts[0].secretKey must be longer than 6"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: 12345678\n  defaultTopicPerm: PUBSUB\n",
     "accounts[0].defaultTopicPerm must be one of"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: 12345678\n  topicPerms: [topicA]\n",
     "accounts[0].topicPerms[0] must be NAME=PERM"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: 12345678\n  groupPerms: [g=ALL]\n",
     "accounts[0].groupPerms[0] must be one of"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: 12345678\n  admin: maybe\n", "admin must be true or false"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: 12345678\n  whiteRemoteAddress: 1.2.3.300\n",
     "whiteRemoteAddress: '1.2.3.300' is not an IP address"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: 12345678\n- accessKey: RocketMQ\n  secretKey: 87654321\n",
     "accessKey 'RocketMQ' is already defined"),
    ("accounts:\n- accessKey: RocketMQ\n  secretKey: 12345678\n  topicPerm: [a=PUB]\n", "unknown key(s) topicPerm"),
    ("globalWhiteRemoteAddresses: [1.2.*]\n", "globalWhiteRemoteAddresses[0]"),
    ("globalWhiteRemoteAddresses: 1.2.3.4\n", "must be a list"),
])
def test_a_bad_file_is_one_line_naming_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(text)
    with pytest.raises(AclFileError) as caught:
        load_acl_file(path)
    message = str(caught.value)
    assert problem in message and str(path) in message and "\n" not in message
    with pytest.raises(AclFileError, match="cannot read ACL file"):
        load_acl_file(tmp_path / "missing.yml")


# ------------------------------------------------------------------------------------------------ white addresses
@pytest.mark.parametrize(("pattern", "matching", "not_matching"), [
    (None, [], ["127.0.0.1"]),
    ("", [], ["127.0.0.1"]),
    ("*", ["127.0.0.1", "::1"], []),
    ("*.*.*.*", ["10.0.0.1"], []),
    ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
    ("1.2.3.{1,2}", ["1.2.3.1", "1.2.3.2"], ["1.2.3.3", "1.2.3.12"]),
    ("1.2.3.4,5.6.7.8", ["1.2.3.4", "5.6.7.8"], ["1.2.3.5"]),
    ("1.2.*.*", ["1.2.0.1", "1.2.255.9"], ["1.3.0.1", "1.20.0.1"]),
    ("1.2.3.*", ["1.2.3.0", "1.2.3.255"], ["1.2.4.1"]),
    ("1.2.3.1-100", ["1.2.3.1", "1.2.3.100"], ["1.2.3.0", "1.2.3.101"]),
    ("1.2.10-20.*", ["1.2.10.7", "1.2.20.255"], ["1.2.9.1", "1.2.21.1"]),
    ("1.2.*.9", ["1.2.7.1"], ["1.3.7.9"]),  # 4.9.8 does not look past the range part
    ("::1", ["::1", "0:0:0:0:0:0:0:1"], ["127.0.0.1"]),
    ("1:2:3:4:5:6:7:*", ["1:2:3:4:5:6:7:ffff"], ["1:2:3:4:5:6:8:1"]),
    ("1:2:3:4:5:6:7:10-20", ["1:2:3:4:5:6:7:15"], ["1:2:3:4:5:6:7:21"]),
])
def test_white_address_patterns(pattern: str | None, matching: list[str], not_matching: list[str]) -> None:
    match = address_pattern(pattern)
    assert all(match(host) for host in matching)
    assert not any(match(host) for host in not_matching)


@pytest.mark.parametrize("pattern", ["1.2.3", "1.2.3.256", "1.2.3.5-300", "1.2.3.-5", "*.1.2.3", "1.2.{3,4}.5",
                                     "1.2.3.{4,x}", "1.2.3.4,nohost", "host.example", "1.2.*"])
def test_bad_white_address_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(ValueError):
        address_pattern(pattern)


# ------------------------------------------------------------------------------------------------------ signature
def test_signature_known_answers_of_the_java_acl_client_rpc_hook() -> None:
    """Computed by 4.9.8's AclClientRPCHook: fields sorted as a TreeMap, UTF-8, body appended, HmacSHA1, Base64."""
    fields = {"b": "TopicTest", "a": "PG", "Zeta": "zé", "OnsChannel": "ALIYUN", "_UNIQUE_KEY_QUERY": "true"}
    signed = signed_fields(fields, "hello 世界".encode(), USER_AK, USER_SK)
    assert signed["Signature"] == "xBsCsWVrg9g4k2M9EVNPdcuMSyk="
    assert signed["AccessKey"] == USER_AK
    assert signed_fields({}, None, USER_AK, USER_SK, "tok")["Signature"] == "UC/2rY3x5VXidWkT9I/CFl37+4U="
    # The broker leaves the unique-key query flag out of what it checks (the client signed it).
    assert acl_content(signed, None) != acl_content(signed, None, server=True)


# ---------------------------------------------------------------------------------------------------- decisions
@pytest.mark.parametrize(("request_", "needed"), [
    (rq.send_v1("PG", "T", b"x"), {"T": AclPerm.PUB}),
    (rq.send_v2("PG", "T", b"x"), {"T": AclPerm.PUB}),
    (rq.send_v2("G", "%RETRY%G", b"x"), {"%RETRY%G": AclPerm.SUB}),
    (rq.send_v1("G", "%RETRY%G", b"x"), {}),  # SEND_MESSAGE has no "group" field: nothing to check
    (rq.send_batch("PG", "T", [(b"x", {})]), {}),
    (rq.pull("G", "T", 0, 0), {"T": AclPerm.SUB, "%RETRY%G": AclPerm.SUB}),
    (rq.send_back("G", 0), {"%RETRY%G": AclPerm.SUB}),
    (rq.query_message("T", "k"), {"T": AclPerm.SUB}),
    (rq.update_consumer_offset("G", "T", 0, 1), {"%RETRY%G": AclPerm.SUB, "T": AclPerm.SUB}),
    (rq.consumer_list("G"), {"%RETRY%G": AclPerm.SUB}),
    (rq.unregister_client("c", consumer_group="G"), {"%RETRY%G": AclPerm.SUB}),
    (RemotingCommand.request(RequestCode.HEART_BEAT, {}, heartbeat_body("G", ["T", "U"])),
     {"%RETRY%G": AclPerm.SUB, "T": AclPerm.SUB, "U": AclPerm.SUB}),
    (rq.create_topic("T"), {}),
    (rq.get_max_offset("T", 0), {}),
])
def test_resources_each_request_needs(request_: RemotingCommand, needed: dict[str, AclPerm]) -> None:
    assert needed_resources(request_).perms == needed


def test_the_first_refused_resource_follows_java_hashmap_order() -> None:
    # Observed on 4.9.8: a pull by a denied group of a denied topic names the topic; a heartbeat names T1 first.
    assert java_hashmap_order(["AclTopicDenied", "%RETRY%AclGroupDenied"])[0] == "AclTopicDenied"
    assert java_hashmap_order(["%RETRY%G1", "T1", "AclTopicA", "T2"]) == ["AclTopicA", "%RETRY%G1", "T1", "T2"]
    many = [f"topic{i}" for i in range(40)]
    assert sorted(java_hashmap_order(many)) == sorted(many)


def test_white_addresses_pass_without_signature(acl_file: Path) -> None:
    config = load_acl_file(acl_file)
    validator = PlainAccessValidator(config)
    unsigned = rq.send_v2("PG", DENIED_TOPIC, b"x")
    assert validator.refusal(unsigned, "10.10.103.9:5000") is None  # global white: nothing checked
    refused = validator.refusal(unsigned, "127.0.0.1:5000")
    assert refused is not None and refused.remark == NO_ACCESS_KEY
    # The admin account's white address (192.168.1.*) lets its unsigned requests through, perms unchecked.
    keyed = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {"AccessKey": ADMIN_AK, "topic": "T"})
    assert validator.refusal(keyed, "192.168.1.20:4000") is None
    assert validator.refusal(keyed, "192.168.2.20:4000").remark == bad_signature(ADMIN_AK)  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------------- served, TCP
@pytest.fixture(scope="module")
def served_acl(acl_file: Path) -> Iterator[ServedCluster]:
    with ServedCluster(1, acl=acl_file) as served:
        served.create_topic(ALLOWED_TOPIC, 4)
        served.create_topic(PUB_ONLY_TOPIC, 4)
        yield served


def test_served_broker_answers_as_the_real_4_9_8_broker(served_acl: ServedCluster) -> None:
    answers = {}
    with WireClient(served_acl.broker_addrs["broker-a"]) as client:
        for name, request in probe_requests().items():
            response = client.request(request)
            answers[name] = (response.code, response.remark)
    assert answers == REAL_ANSWERS


def _one_request_per_kind(served: ServedCluster) -> list[int]:
    broker = served.cluster.brokers["broker-a"]  # type: ignore[union-attr]
    return [*sorted(broker._handlers), 9999]  # every code the broker handles, and one it does not


def test_every_request_kind_is_refused_without_a_valid_signature(served_acl: ServedCluster) -> None:
    codes = _one_request_per_kind(served_acl)
    assert len(codes) > 50
    with WireClient(served_acl.broker_addrs["broker-a"]) as client:
        for code in codes:
            body = heartbeat_body("G", [ALLOWED_TOPIC]) if code == RequestCode.HEART_BEAT else None
            unsigned = RemotingCommand.request(code, {"topic": ALLOWED_TOPIC}, body)
            response = client.request(unsigned)
            assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, NO_ACCESS_KEY), code
            wrong = sign(RemotingCommand.request(code, {"topic": ALLOWED_TOPIC}, body), secret_key="not-the-secret")
            response = client.request(wrong)
            assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, bad_signature(USER_AK)), code


def test_without_acl_nothing_is_checked_as_before() -> None:
    with ServedCluster(1) as served:
        served.create_topic(ALLOWED_TOPIC, 4)
        assert served.cluster is not None and served.cluster.acl is None  # off by default, as aclEnable=false
        with WireClient(served.broker_addrs["broker-a"]) as client:
            for code in _one_request_per_kind(served):
                if code == RequestCode.GET_BROKER_CLUSTER_ACL_INFO:
                    continue  # never answered without ACL, as by 4.9.8 (admin_maintenance.py)
                body = heartbeat_body("G", [ALLOWED_TOPIC]) if code == RequestCode.HEART_BEAT else None
                response = client.request(RemotingCommand.request(code, {"topic": ALLOWED_TOPIC}, body))
                assert not (response.remark or "").startswith(ACL_EXCEPTION), code
            assert client.request(rq.send_v2("PG", ALLOWED_TOPIC, b"x")).code == ResponseCode.SUCCESS


def test_served_name_server_guards_its_changing_requests(served_acl: ServedCluster) -> None:
    """rocketspec's extension: registering or unregistering a broker (and the other changing requests) needs an
    admin account; route reads stay open; the served brokers register in-process and are not affected."""
    fake = rq.register_broker("DefaultCluster", "broker-fake", "127.0.0.1:1")
    with WireClient(served_acl.namesrv_addr) as client:
        assert client.request(rq.route(ALLOWED_TOPIC)).code == ResponseCode.SUCCESS  # the real broker's route
        refused = client.request(fake)
        assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_ERROR, NO_ACCESS_KEY)
        user = client.request(sign(rq.unregister_broker("DefaultCluster", "broker-a",
                                                        served_acl.broker_addrs["broker-a"])))
        assert user.code == ResponseCode.SYSTEM_ERROR and "Need admin permission for request code=104" in user.remark
        for request in (rq.put_kv_config("ns", "k", "v"), rq.delete_kv_config("ns", "k"),
                        rq.wipe_write_perm("broker-a"), rq.add_write_perm("broker-a"),
                        rq.delete_topic_in_namesrv(ALLOWED_TOPIC)):
            assert client.request(request).remark == NO_ACCESS_KEY, request.code_name()
        admin = client.request(sign(rq.register_broker("DefaultCluster", "broker-fake", "127.0.0.1:1"),
                                    ADMIN_AK, ADMIN_SK))
        assert admin.code == ResponseCode.SUCCESS
        assert client.request(sign(rq.unregister_broker("DefaultCluster", "broker-fake", "127.0.0.1:1"),
                                   ADMIN_AK, ADMIN_SK)).code == ResponseCode.SUCCESS
        assert client.request(rq.route(ALLOWED_TOPIC)).code == ResponseCode.SUCCESS


def test_serve_cli_acl(tmp_path: Path, acl_file: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("accounts:\n- accessKey: short\n")
    for path, problem in ((bad, "accessKey must be longer than 6"), (tmp_path / "none.yml", "cannot read ACL")):
        done = subprocess.run([*CLI, "serve", "--port", "0", "--acl", str(path)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 2 and problem in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    from test_serve_cli import serving

    with serving("--acl", str(acl_file), "--topic", ALLOWED_TOPIC) as addrs, WireClient(addrs["broker-a"]) as client:
        assert client.request(rq.send_v2("PG", ALLOWED_TOPIC, b"x")).remark == NO_ACCESS_KEY
        assert client.request(sign(rq.send_v2("PG", ALLOWED_TOPIC, b"x"))).code == ResponseCode.SUCCESS


# ------------------------------------------------------------------------------------------------- in-process
def test_in_process_clients_sign_with_their_credentials(acl_file: Path) -> None:
    with pytest.raises(ValueError, match="give both or neither"):
        ClientConfig(access_key=USER_AK)
    with Cluster(1, acl=acl_file) as cluster:
        cluster.create_topic(ALLOWED_TOPIC, 2)
        producer = cluster.producer("PG", access_key=USER_AK, secret_key=USER_SK)
        assert producer.send(Message(ALLOWED_TOPIC, b"signed")).status.name == "SEND_OK"
        with pytest.raises(MQClientError) as denied:
            producer.send(Message(DENIED_TOPIC, b"denied"))
        assert isinstance(denied.value.cause, MQBrokerError) and denied.value.code == ResponseCode.SYSTEM_ERROR
        assert "No default permission for topic:AclTopicDenied" in (denied.value.cause.remark or "")
        unsigned = cluster.producer("PG2", retry_times_when_send_failed=0)
        with pytest.raises(MQClientError) as refused:
            unsigned.send(Message(ALLOWED_TOPIC, b"unsigned"))
        assert isinstance(refused.value.cause, MQBrokerError) and refused.value.cause.remark == NO_ACCESS_KEY
        got: list[bytes] = []

        def listener(msgs: list[MessageExt]) -> ConsumeStatus:
            got.extend(m.body for m in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        cluster.push_consumer("CG", ALLOWED_TOPIC, listener, access_key=USER_AK, secret_key=USER_SK)
        cluster.run_until_idle()
        assert got == [b"signed"]
    with pytest.raises(AclFileError):
        Cluster(1, acl=acl_file.parent / "missing.yml")


# ------------------------------------------------------------------------------------------------- C++ client
CPP_DRIVER = Path(__file__).parent / "realclients" / "cpp_driver.py"


def _cpp(tmp_path: Path, name: str, scenario: str, namesrv: str, *args: str) -> list[dict[str, object]]:
    home = tmp_path / name
    home.mkdir()
    done = subprocess.run([sys.executable, str(CPP_DRIVER), scenario, "--namesrv", namesrv, "--topic", ALLOWED_TOPIC,
                           "--timeout", "20", "--send-retries", "0", "--name", name, *args],
                          capture_output=True, text=True, timeout=90, env={**os.environ, "HOME": str(home)})
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_cpp_client_with_session_credentials(tmp_path: Path, acl_file: Path) -> None:
    """librocketmq signs with ``set_session_credentials(ak, sk, "ALIYUN")`` (adding OnsChannel): good credentials
    send and consume, a wrong secret or none send nothing (as against a real 4.9.8 broker with the same file)."""
    if importlib.util.find_spec("rocketmq") is None:
        pytest.skip("the C++ client (PyPI rocketmq==0.4.4, the `test` extra on Linux x86-64) is not installed")
    good = ("--access-key", USER_AK, "--secret-key", USER_SK)
    with ServedCluster(1, acl=acl_file) as served, ThreadPoolExecutor(3) as pool:
        served.create_topic(ALLOWED_TOPIC, 4)
        remarks: set[str] = set()  # what the broker answered (the observer runs on the runtime loop)
        served.add_observer(lambda frame: remarks.add(frame.command.remark or "")
                            if not frame.from_client and frame.node == "broker-a" else None)
        ns = served.namesrv_addr
        runs = {
            "good": pool.submit(_cpp, tmp_path, "good", "send-sync", ns, "--count", "3", "--group", "CppPG", *good),
            "wrong": pool.submit(_cpp, tmp_path, "wrong", "send-sync", ns, "--count", "1", "--group", "CppPG2",
                                 "--access-key", USER_AK, "--secret-key", "not-the-secret"),
            "none": pool.submit(_cpp, tmp_path, "none", "send-sync", ns, "--count", "1", "--group", "CppPG3"),
        }
        lines = {name: run.result() for name, run in runs.items()}
        consumed = _cpp(tmp_path, "consume", "consume", ns, "--group", "CppCG", "--expect", "3", *good)
    sent = {name: [line for line in out if line["event"] == "sent"] for name, out in lines.items()}
    assert [line["status"] for line in sent["good"]] == ["OK"] * 3
    assert sent["wrong"] == [] and sent["none"] == []
    # Refused by the broker's check, not before it; librocketmq sends an empty AccessKey when it has no credentials.
    no_config = "org.apache.rocketmq.acl.common.AclException: No acl config for , " \
        "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:668)"
    assert {bad_signature(USER_AK), no_config} <= remarks
    assert sorted(line["body"] for line in consumed if line["event"] == "consumed") == ["msg-0", "msg-1", "msg-2"]


def test_permission_checks_as_permission_checkpermission() -> None:
    """DENY refuses everything; a request needing ANY passes with PUB or SUB held; otherwise a common bit."""
    assert [check_permission(AclPerm.ANY, held) for held in (AclPerm.PUB, AclPerm.SUB, AclPerm.PUB | AclPerm.SUB,
                                                              AclPerm.DENY | AclPerm.PUB, AclPerm(0))] == [
        True, True, True, False, False]
    assert [check_permission(AclPerm.PUB, held) for held in (AclPerm.PUB, AclPerm.SUB, AclPerm.PUB | AclPerm.SUB)] == [
        True, False, True]
