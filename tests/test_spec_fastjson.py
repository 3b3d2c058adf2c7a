"""``rocketspec.spec.fastjson``: the one reader of fastjson's object- and number-keyed maps."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.spec import fastjson

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@given(JSON)
def test_plain_json_reads_as_json(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert fastjson.loads(text) == json.loads(text)
    assert fastjson.loads(text.encode("utf-8")) == json.loads(text)


def test_an_object_key_goes_through_object_key() -> None:
    text = ('{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"t"}:5, '
            '{"topic":"t","queueId":0,"brokerName":"b"}:7}}')
    table = fastjson.loads(text)["offsetTable"]
    assert table == {(("brokerName", "b"), ("queueId", 1), ("topic", "t")): 5,
                     (("brokerName", "b"), ("queueId", 0), ("topic", "t")): 7}
    named = fastjson.loads(text, object_key=lambda k: f"{k['topic']}/{k['queueId']}")["offsetTable"]
    assert named == {"t/1": 5, "t/0": 7}


def test_a_bare_number_key_is_an_int() -> None:
    assert fastjson.loads('{0:{"a":1},-3:[]}') == {0: {"a": 1}, -3: []}


@pytest.mark.parametrize("text", ['{"a":1} x', '{"a" 1}', '{"a":1 "b":2}', '[1 2]', '{"a":', '[1,', '{', '{[1]:2}',
                                  '{"a":tru}'])
def test_what_is_not_fastjson_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        fastjson.loads(text)
