"""The pytest plugin's example in docs/serve.md stays true: its two blocks (the Java application and its tests) are
run as they stand against the official Java client 4.9.8, and what it says of the client's retries is the spec's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from realcluster import require_home

from rocketspec.refimpl.served import fault_rule
from rocketspec.spec.protocol import DEFAULT_RETRY_RESPONSE_CODES, ResponseCode
from rocketspec.spec.send_retry import response_code_retried

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parent.parent / "docs" / "serve.md"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## The pytest plugin"):text.index("## Faults over the wire")]


def _block(language: str) -> str:
    """The section's one code block in ``language``."""
    blocks = re.findall(rf"```{language}\n(.*?)```", _section(), re.S)
    assert len(blocks) == 1, f"docs/serve.md's pytest plugin section has {len(blocks)} {language} blocks, not one"
    return str(blocks[0])


def _fault_codes(source: str) -> dict[str, str]:
    """Each test of the block -> the response code its fault answers (marker faults or ``faults.fail`` calls)."""
    found: dict[str, str] = {}
    constants = {t.id: node.value for node in ast.parse(source).body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.keyword) and sub.arg == "code" and isinstance(sub.value, ast.Constant):
                found[node.name] = str(sub.value.value)
            if isinstance(sub, ast.keyword) and sub.arg == "faults" and isinstance(sub.value, ast.List):
                for element in sub.value.elts:
                    value = constants.get(element.id) if isinstance(element, ast.Name) else element
                    rule = ast.literal_eval(value) if value is not None else {}
                    found[node.name] = str(rule["code"])
    return found


def test_the_example_retries_only_what_the_java_client_retries() -> None:
    """The test that survives a fault injects a code SEND-4 retries; the one that is refused, a code it does not."""
    codes = _fault_codes(_block("python"))
    assert codes == {"test_orders_survive_a_failing_broker": "SYSTEM_ERROR",
                     "test_a_busy_broker_refuses_the_order": "SYSTEM_BUSY"}
    assert response_code_retried(ResponseCode[codes["test_orders_survive_a_failing_broker"]])
    assert not response_code_retried(ResponseCode[codes["test_a_busy_broker_refuses_the_order"]])
    # The prose lists retryResponseCodes: exactly the spec's set.
    listed = re.search(r"code in `retryResponseCodes`: (.*?) \(SEND-4", _section(), re.S)
    assert listed is not None
    assert set(re.findall(r"`([A-Z_]+)`", listed.group(1))) == {c.name for c in map(ResponseCode,
                                                                                     DEFAULT_RETRY_RESPONSE_CODES)}


def test_the_example_fault_rules_parse() -> None:
    source = _block("python")
    compile(source, "docs/serve.md#the-pytest-plugin", "exec")
    rule = re.search(r"ONE_SYSTEM_ERROR = (\{.*?\})\n", source)
    assert rule is not None
    assert fault_rule(ast.literal_eval(rule.group(1))).response_code == ResponseCode.SYSTEM_ERROR


@pytest.mark.slow  # two JVMs, each compiling PlaceOrder.java from source
def test_the_example_runs_against_the_java_client(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    home = require_home()
    monkeypatch.setenv("ROCKETMQ_HOME", str(home))
    pytester.makefile(".java", PlaceOrder=_block("java"))
    pytester.makepyfile(test_orders=_block("python"))
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=2)
