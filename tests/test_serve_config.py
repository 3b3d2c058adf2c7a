"""``rocketspec serve --broker-config FILE`` / ``--namesrv-config FILE``: RocketMQ's configuration files read as 4.9.8
reads them (``Properties.load``, ``MixAll.properties2Object``), reaching the servers, overridden by flags; and every
serve error naming the option behind it, every unknown option reported with its sub-command's usage."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from documented_config import documented_files, documented_settings
from realcluster import free_port_block
from test_serve_cli import serving

from rocketspec.cli.brokerconf import serve_config
from rocketspec.cli.main import build_parser, main
from rocketspec.conformance import requests
from rocketspec.conformance.broker import BROKER_CASES
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import Outcome, select
from rocketspec.conformance.runner import run_cases
from rocketspec.conformance.target import discover
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl import Cluster
from rocketspec.refimpl.broker.admin_runtime import JAVA_DEFAULTS
from rocketspec.refimpl.broker.config_file import FIXED, IGNORED, SERVE_KEYS, load_broker_file
from rocketspec.refimpl.broker.config_settings import BROKER_SETTINGS
from rocketspec.refimpl.namesrv_config import load_namesrv_file
from rocketspec.refimpl.properties import ConfigFileError, load_properties, parse_properties
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import NAMESRV_CONFIG_DEFAULTS, RequestCode, ResponseCode

ROOT = Path(__file__).resolve().parent.parent

# 4.9.8's distribution/conf/broker.conf (and 2m-noslave/broker-a.properties), its license header left out.
DISTRIBUTION_BROKER_CONF = """\
brokerClusterName = DefaultCluster
brokerName = broker-a
brokerId = 0
deleteWhen = 04
fileReservedTime = 48
brokerRole = ASYNC_MASTER
flushDiskType = ASYNC_FLUSH
"""


def error_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one stderr line of a ``rocketspec`` command that must fail with exit status 2 before serving."""
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port something listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


# ------------------------------------------------------------------------------------------------ Properties.load
def test_properties_load_reads_as_java() -> None:
    """Comments (# and !), blanks, key=value / key:value / key value, escapes, continuations, CR/LF/CRLF, trailing
    blanks kept in values, the last value of a key winning (java.util.Properties.load)."""
    text = ("# comment\n! a comment is not continued \\\nkept=yes\n  \n"
            "a=1\r\n"
            "  b : two  \r"
            "c three\n"
            "d\\=e\\:f\\ g = h\\ti\\u0041\\\\\n"
            "long = one, \\\n       two\\\n\n"
            "empty\n"
            "a=last\n"
            "x=\\z\\\\\\\n    y")
    assert parse_properties(text) == {"kept": "yes", "a": "last", "b": "two  ", "c": "three", "d=e:f g": "h\tiA\\",
                                      "long": "one, two", "empty": "", "x": "z\\y"}
    lines = {entry.key: entry.line for entry in load_properties(text)}
    assert lines["kept"] == 3 and lines["long"] == 9 and lines["empty"] == 12 and lines["x"] == 14
    with pytest.raises(ValueError, match="line 2: malformed"):
        load_properties("ok=1\nbad=\\u12x4\n")


# ------------------------------------------------------------------------------------------- the broker's file
def test_every_4_9_8_broker_property_is_taken_refused_or_ignored() -> None:
    """Each property a 4.9.8 broker has is, by one rule, a setting, a serve option, fixed, or ignored."""
    groups = [set(BROKER_SETTINGS), set(SERVE_KEYS), set(FIXED), {k for keys in IGNORED.values() for k in keys}]
    assert sum(len(group) for group in groups) == len(set().union(*groups))  # no key in two groups
    assert set(JAVA_DEFAULTS) <= set().union(*groups)


def test_the_distributions_master_conf_loads_and_its_slave_conf_is_refused() -> None:
    loaded = load_broker_file(DISTRIBUTION_BROKER_CONF)
    assert loaded.options == {"cluster_name": "DefaultCluster", "file_reserved_ms": 48 * 3_600_000, "flush": "async"}
    assert loaded.ignored == ("brokerName",)
    with pytest.raises(ConfigFileError, match=r"line 3: brokerId is '1': the reference broker takes only '0'"):
        load_broker_file(DISTRIBUTION_BROKER_CONF.replace("brokerId = 0", "brokerId = 1"))


@pytest.mark.parametrize(("text", "message"), [
    ("transactionTimeOut=1000\n\n# c\nbrokerFoo=1", "line 4: brokerFoo is not a broker setting the reference broker "
                                                  "models"),
    ("transactionTimeOut=1000 ", "line 1: transactionTimeOut is '1000 ': expected a Java long"),
    ("maxMessageSize=4294967296", "line 1: maxMessageSize is '4294967296': expected a Java int"),
    ("enablePropertyFilter=yes", "line 1: enablePropertyFilter is 'yes': expected true or false"),
    ("flushDiskType=sync", "line 1: flushDiskType is 'sync': expected one of ASYNC_FLUSH, SYNC_FLUSH"),
    ("messageDelayLevel=1s 1x", "line 1: messageDelayLevel is '1s 1x': bad delay level item '1x'"),
    ("transactionCheckMax=-1", "line 1: transactionCheckMax is '-1': it must be a non-negative integer"),
    ("useTLS=true", "line 1: useTLS is 'true': the reference broker takes only 'false': serve speaks plain TCP"),
])
def test_a_key_or_value_the_broker_cannot_take_names_the_line(text: str, message: str) -> None:
    with pytest.raises(ConfigFileError) as caught:
        load_broker_file(text)
    assert str(caught.value).startswith(message), caught.value


def test_the_documented_conformance_files_set_what_the_suite_needs() -> None:
    """Both documents show the same two files: short timers on both brokers, broker-b the other way round."""
    assert documented_files("serve.md")[1:] == documented_files("conformance.md")[1:]
    for doc in ("serve.md", "conformance.md"):
        timers = {"message_delay_level": " ".join(["1s"] * 18), "transaction_timeout_ms": 1000,
                  "transaction_check_interval_ms": 1000, "transaction_check_max": 3}
        assert documented_settings(doc) == [
            {**timers, "enable_property_filter": True},
            {**timers, "enable_property_filter": False, "file_reserved_ms": 0, "segment_bytes": 262144}]


# ------------------------------------------------------------------------------------------- the name server's
def test_namesrv_file_settings_last_across_restarts() -> None:
    loaded = load_namesrv_file("orderMessageEnable=true\nproductEnvName=test\nkvConfigPath=/x\nlistenPort=19876")
    assert loaded.settings == {"orderMessageEnable": "true", "productEnvName": "test"}
    assert loaded.serve == {"listenPort": 19876} and loaded.ignored == ("kvConfigPath",)
    with pytest.raises(ConfigFileError, match="line 1: clusterTest is 'on': expected true or false"):
        load_namesrv_file("clusterTest=on")
    with pytest.raises(ConfigFileError, match="line 1: brokerName is not a name server setting"):
        load_namesrv_file("brokerName=a")
    with Cluster(clock="simulated") as cluster:
        namesrv = cluster.namesrv
        cluster.runtime.submit(lambda: namesrv.admin.configure(loaded.settings))
        cluster.runtime.submit(namesrv.shutdown)
        cluster.runtime.submit(namesrv.start)
        config = cluster.runtime.submit(lambda: dict(namesrv.admin.config))
    assert namesrv.admin.order_message_enable
    assert set(config) == set(dict(NAMESRV_CONFIG_DEFAULTS)) and config["productEnvName"] == "test"


# ------------------------------------------------------------------------------------------------- over the wire
def test_the_files_reach_the_servers_and_flags_override_them(tmp_path: Path) -> None:
    """GET_BROKER_CONFIG of every broker reports the file's settings, but the flags given; GET_NAMESRV_CONFIG the
    name server file's."""
    broker_conf = tmp_path / "broker.conf"
    broker_conf.write_text(documented_files("serve.md")[0] + "flushDiskType=SYNC_FLUSH\nbrokerClusterName=Files\n"
                           "longPollingEnable=false\nnamesrvAddr=10.0.0.1:9876\n", encoding="latin-1")
    namesrv_conf = tmp_path / "namesrv.properties"
    namesrv_conf.write_text("orderMessageEnable=true\n", encoding="latin-1")
    with serving("--brokers", "2", "--broker-config", str(broker_conf), "--namesrv-config", str(namesrv_conf),
                 "--message-delay-level", "2s 2s", "--flush", "async") as addrs:
        target = discover(addrs["namesrv"])
        with WireClient(addrs["namesrv"]) as client:
            namesrv = requests.properties_body(client.request(requests.namesrv_config()))
        with WireClient(addrs["broker-a"]) as client:
            # UPDATE_BROKER_CONFIG reads its body with the same Properties.load: a continued line, a bad escape.
            update = client.request(RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {},
                                                            b"transactionCheckMax=\\\n    5\n"))
            malformed = client.request(RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, b"x=\\u12\n"))
            updated = requests.properties_body(client.request(requests.broker_config()))
    assert (update.code, malformed.code, malformed.remark) == (ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR,
                                                               "string2Properties error")
    assert updated["transactionCheckMax"] == "5"
    assert len(target.brokers) == 2
    for broker in target.brokers:
        assert broker.cluster == "Files"
        config = broker.config
        assert (config["transactionTimeOut"], config["transactionCheckInterval"], config["transactionCheckMax"],
                config["enablePropertyFilter"], config["longPollingEnable"]) == ("1000", "1000", "3", "true", "false")
        assert (config["messageDelayLevel"], config["flushDiskType"]) == ("2s 2s", "ASYNC_FLUSH")  # the flags'
    assert namesrv["orderMessageEnable"] == "true"


def test_a_namesrv_files_listen_port_is_used_unless_port_is_given(tmp_path: Path, taken_port: int,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"# the port\nlistenPort={taken_port}\n", encoding="latin-1")
    assert error_line(capsys, "serve", "--namesrv-config", str(conf)) == (
        f"rocketspec: error: --namesrv-config {conf} line 2: listenPort {taken_port}: cannot listen on "
        f"127.0.0.1:{taken_port}: Address already in use")


# ---------------------------------------------------------------------------------- errors naming their option
def test_serve_errors_name_their_option(tmp_path: Path, taken_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x", encoding="utf-8")
    bad_conf = tmp_path / "broker.conf"
    bad_conf.write_text("# c\n\n! c\n\n\ntransactionTimeOut=1000\nbrokerFoo=1\n", encoding="latin-1")
    missing = tmp_path / "missing.conf"
    cases = {
        ("--data-dir", "/proc/nope"): "--data-dir /proc/nope: cannot write there: No such file or directory",
        ("--data-dir", str(a_file)): f"--data-dir {a_file}: is a file, not a directory",
        ("--trace", "/proc/nope"): "--trace /proc/nope: cannot write there: No such file or directory",
        ("--broker-config", str(missing)): f"--broker-config {missing}: cannot read: No such file or directory",
        ("--namesrv-config", str(tmp_path)): f"--namesrv-config {tmp_path}: cannot read: Is a directory",
        ("--broker-config", str(bad_conf)): f"--broker-config {bad_conf} line 7: brokerFoo is not a broker setting "
                                            "the reference broker models",
        ("--faults", str(missing)): f"--faults {missing}: cannot read fault file: No such file or directory",
        ("--acl", str(missing)): f"--acl {missing}: cannot read ACL file: No such file or directory",
        ("--broker-port", str(taken_port)): f"--broker-port {taken_port}: cannot listen on 127.0.0.1:{taken_port}: "
                                            "Address already in use",
        ("--host", "no-such-host.invalid"): "--host no-such-host.invalid: cannot resolve",
        ("--advertise-host", "no-such-host.invalid"): "--advertise-host no-such-host.invalid: cannot resolve",
    }
    for args, message in cases.items():
        line = error_line(capsys, "serve", "--port", "0", *args)
        assert line.startswith(f"rocketspec: error: {message}"), (args, line)
    assert error_line(capsys, "serve", "--port", str(taken_port)) == (
        f"rocketspec: error: --port {taken_port}: cannot listen on 127.0.0.1:{taken_port}: Address already in use")
    assert not (tmp_path / "nope").exists()


def test_an_acl_enabled_file_needs_the_acl_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("aclEnable=true\n", encoding="latin-1")
    assert error_line(capsys, "serve", "--port", "0", "--broker-config", str(conf)).startswith(
        f"rocketspec: error: --broker-config {conf} line 1: aclEnable=true needs --acl FILE")


@pytest.mark.parametrize(("argv", "command", "extras"), [
    (("serve", "--prot", "1"), "serve", "--prot 1"),
    (("spec", "check", "--bogus"), "spec check", "--bogus"),
    (("traces", "check", "DIR", "--bogus"), "traces check", "--bogus"),
    (("conformance", "broker", "--bogus", "x"), "conformance broker", "--bogus x"),
])
def test_an_unknown_option_is_reported_with_its_subcommands_usage(argv: tuple[str, ...], command: str, extras: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"usage: rocketspec {command} "), captured.err
    assert captured.err.splitlines()[-1] == f"rocketspec {command}: error: unrecognized arguments: {extras}"


@pytest.mark.slow
def test_with_the_documented_files_the_cases_needing_settings_run(tmp_path: Path) -> None:
    """Against a default serve the check-back cases skip (60 s check interval), and so does the case that needs
    deletable commit-log files; with the two files of docs/serve.md (one per broker) they run and pass, and so do the
    SQL92 refusals on the broker that has SQL92 off."""
    files = []
    for name, text in zip(("conformance-a.conf", "conformance-b.conf"), documented_files("serve.md"), strict=True):
        files += ["--broker-config", str(tmp_path / name)]
        (tmp_path / name).write_text(text, encoding="latin-1")
    cases = select(BROKER_CASES, ["broker/transaction/check-on-producer-connection", "broker/filter/*-disabled",
                                  "broker/pull/offset-too-small"])

    def outcomes(*args: str) -> dict[str, Outcome]:
        with serving("--brokers", "2", *args) as addrs:
            target = discover(addrs["namesrv"])
            results = run_cases(cases, lambda c, budget: BrokerContext(target, c, budget), 60.0)
        return {r.case.id.rsplit("/", 1)[1]: r.outcome for r in results}

    # RocketMQ's defaults: SQL92 off (the refusals show), 60 s checks, 72 h of files kept.
    assert outcomes() == {"check-on-producer-connection": Outcome.SKIPPED, "offset-too-small": Outcome.SKIPPED,
                          "sql92-property-filter-disabled": Outcome.PASSED,
                          "check-client-config-disabled": Outcome.PASSED}
    assert set(outcomes(*files).values()) == {Outcome.PASSED}


def test_one_file_per_broker_each_broker_reads_its_own(tmp_path: Path) -> None:
    """``--broker-config`` given once per broker: GET_BROKER_CONFIG of each reports its own file's settings, and
    each listens on its own file's listenPort."""
    base = free_port_block(16)
    ports = [base, base + 13]  # not the --broker-port spacing (+10): each file's own
    for name, port, on in (("a.conf", ports[0], "true"), ("b.conf", ports[1], "false")):
        (tmp_path / name).write_text(f"listenPort={port}\nenablePropertyFilter={on}\nmaxMessageSize={port}\n",
                                     encoding="latin-1")
    with serving("--brokers", "2", "--broker-config", str(tmp_path / "a.conf"),
                 "--broker-config", str(tmp_path / "b.conf")) as addrs:
        target = discover(addrs["namesrv"])
    assert [b.addr.rsplit(":", 1)[1] for b in target.brokers] == [str(p) for p in ports]
    assert [(b.config["enablePropertyFilter"], b.config["maxMessageSize"]) for b in target.brokers] == [
        ("true", str(ports[0])), ("false", str(ports[1]))]


def test_per_broker_files_that_cannot_be_served_name_the_files(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    def conf(name: str, text: str) -> str:
        (tmp_path / name).write_text(text, encoding="latin-1")
        return str(tmp_path / name)

    plain = conf("plain.conf", "transactionTimeOut=1000\n")
    fast = conf("fast.conf", "messageDelayLevel=1s 2s\n")
    port = conf("port.conf", "listenPort=30911\n")
    acl = conf("acl.conf", "aclEnable=true\n")
    cases = {
        ("--brokers", "3", "--broker-config", plain, "--broker-config", plain):
            "--broker-config is given 2 times for 3 broker(s): give one file for every broker, or one per broker",
        ("--brokers", "2", "--broker-config", plain, "--broker-config", fast):
            f"--broker-config files set different messageDelayLevel ({plain} (the default), {fast} line 1)",
        ("--brokers", "2", "--broker-config", port, "--broker-config", plain):
            f"--broker-config {port} sets listenPort and {plain} does not",
        ("--brokers", "2", "--broker-config", port, "--broker-config", port):
            f"--broker-config {port} line 1: listenPort 30911: another file's broker listens there",
        ("--brokers", "2", "--acl", acl, "--broker-config", acl, "--broker-config", plain):
            f"--broker-config {acl} sets aclEnable=true and another file does not",
    }
    for args, message in cases.items():
        line = error_line(capsys, "serve", "--port", "0", *args)
        assert line.startswith(f"rocketspec: error: {message}"), (args, line)
    # A flag overrides every file: the delay tables then agree.
    assert serve_config(build_parser().parse_args(
        ["serve", "--brokers", "2", "--broker-config", plain, "--broker-config", fast, "--message-delay-level",
         "3s"])).broker_settings[1]["message_delay_level"] == "3s"
