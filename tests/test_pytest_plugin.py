"""The pytest plugin (``pytest11`` entry point): fixtures and their marker options, run in a nested pytest."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

_WIRE = textwrap.dedent('''
    import socket
    from rocketspec.refimpl.frame import FrameReader, decode, encode
    from rocketspec.refimpl.remoting import RemotingCommand
    from rocketspec.spec.protocol import RequestCode

    def ask(addr, code, fields):
        host, port = addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(encode(RemotingCommand.request(code, fields)))
            reader = FrameReader()
            while True:
                frames = reader.feed(sock.recv(65536))
                if frames:
                    return decode(frames[0])[0]
''')


def test_the_plugin_is_registered_by_its_entry_point(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*rocketmq_cluster*", "*rocketmq_server*"])


def test_rocketmq_cluster_takes_its_options_from_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(textwrap.dedent('''
        import pytest
        from rocketspec.refimpl.message import Message

        @pytest.mark.rocketmq_cluster(brokers=2, seed=3, topics={"Orders": 2})
        def test_send(rocketmq_cluster):
            assert rocketmq_cluster.broker_names == ["broker-a", "broker-b"]
            producer = rocketmq_cluster.producer("PG")
            result = producer.send(Message("Orders", b"one"))
            assert result.status.name == "SEND_OK"
            rocketmq_cluster.run_until_idle()
            assert [m.body for m in rocketmq_cluster.messages("Orders")] == [b"one"]

        def test_default_is_one_simulated_broker(rocketmq_cluster):
            assert rocketmq_cluster.broker_names == ["broker-a"]
            assert rocketmq_cluster.runtime.simulated
    '''))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_rocketmq_server_serves_routes_faults_and_records_a_trace(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(_WIRE + textwrap.dedent('''
        import pytest
        from rocketspec.spec.protocol import ResponseCode

        TRACES = []

        BUSY = {"action": "fail", "target": "namesrv", "request": "GET_BROKER_CLUSTER_INFO", "code": "SYSTEM_BUSY",
                "times": 1}

        @pytest.mark.rocketmq_server(brokers=2, topics={"Orders": 3}, faults=[BUSY])
        def test_served(rocketmq_server):
            route = ask(rocketmq_server.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"})
            assert route.code == ResponseCode.SUCCESS
            for addr in rocketmq_server.broker_addrs.values():
                assert addr.encode() in route.body
            busy = ask(rocketmq_server.namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO, {})
            assert busy.code == ResponseCode.SYSTEM_BUSY
            again = ask(rocketmq_server.namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO, {})
            assert again.code == ResponseCode.SUCCESS
            rocketmq_server.faults.fail("broker-b", "GET_MAX_OFFSET", code="SYSTEM_ERROR")
            queue = {"topic": "Orders", "queueId": 0}
            b = ask(rocketmq_server.broker_addrs["broker-b"], RequestCode.GET_MAX_OFFSET, queue)
            a = ask(rocketmq_server.broker_addrs["broker-a"], RequestCode.GET_MAX_OFFSET, queue)
            assert (b.code, a.code) == (ResponseCode.SYSTEM_ERROR, ResponseCode.SUCCESS)
            TRACES.append(rocketmq_server.trace_dir)

        def test_trace_was_written():
            (trace_dir,) = TRACES
            assert (trace_dir / "_trace.json").is_file()

        @pytest.mark.rocketmq_server(trace=False)
        def test_no_trace(rocketmq_server):
            assert rocketmq_server.trace_dir is None
    '''))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_marker_options_are_checked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(textwrap.dedent('''
        import pytest

        @pytest.mark.rocketmq_server(topics=["not", "a", "mapping"])
        def test_bad_topics(rocketmq_server):
            pass

        @pytest.mark.rocketmq_cluster(brokers=0)
        def test_bad_brokers(rocketmq_cluster):
            pass
    '''))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*topics=...) must map topic names to queue counts*",
                                 "*brokers must be a positive integer*"])


_UNSUPPORTED_DRIVER = textwrap.dedent('''
    import json, os, sys
    print(json.dumps({"event": "unsupported", "reason": "role " + os.environ["ROCKETSPEC_ROLE"] + " not written yet"}))
    sys.exit(3)
''')
_GARBAGE_DRIVER = 'print("not json", flush=True)\nimport time\ntime.sleep(30)\n'


def test_rocketmq_client_conformance_runs_the_client_suite_against_a_driver(pytester: pytest.Pytester) -> None:
    pytester.makefile(".py", unsupported_driver=_UNSUPPORTED_DRIVER, garbage_driver=_GARBAGE_DRIVER)
    pytester.makepyfile(test_client=textwrap.dedent('''
        import sys

        def test_skips_are_not_failures(rocketmq_client_conformance):
            results = rocketmq_client_conformance([sys.executable, "unsupported_driver.py"],
                                                  cases=["client/send/oneway-one-attempt"], timeout=10)
            assert [(r.case.id, r.outcome.value, r.detail) for r in results] == [
                ("client/send/oneway-one-attempt", "skipped",
                 "the client cannot play this case: role producer not written yet")]

        def test_a_broken_driver_fails_the_test(rocketmq_client_conformance):
            rocketmq_client_conformance([sys.executable, "garbage_driver.py"], cases=["client/send/oneway*"],
                                        timeout=10)

        def test_a_missing_command_fails_the_test(rocketmq_client_conformance):
            rocketmq_client_conformance("no-such-driver-program")
    '''))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*1 of 1 client conformance cases did not pass:*",
        "*ERROR client/send/oneway-one-attempt [[]SEND-9, SEND-1[]]*driver printed a line that is not JSON: not json*",
        "*client conformance: the driver command 'no-such-driver-program' is not found on PATH*",
    ])
