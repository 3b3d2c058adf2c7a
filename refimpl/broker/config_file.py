"""A broker configuration file (RocketMQ's ``broker.conf``, ``mqbroker -c FILE``) as the reference broker takes it.

The file is read as 4.9.8's ``BrokerStartup`` reads it: ``Properties.load`` (``refimpl.properties``), then
``MixAll.properties2Object`` into ``BrokerConfig``, ``NettyServerConfig``, ``NettyClientConfig`` and
``MessageStoreConfig``. Java ignores a key no setter has and a value that does not parse; a test double that did
the same would hide a mistyped setting, so here every key of the file is one of:

- a setting the reference broker has (``config_settings.BROKER_SETTINGS``): its value is parsed by its Java type
  and applied to every broker;
- a setting ``serve`` takes from its own options (:data:`SERVE_KEYS`: the listen port, the advertised address, ACL,
  the idle timeout): the file's value is used where the option is not given;
- a setting the reference broker runs at one value (:data:`FIXED`): accepted at that value, refused with the reason
  at any other;
- a setting that changes nothing a client of the reference broker can see (:data:`IGNORED`: names and addresses
  ``serve`` decides, store paths, HA, thread pools, queues, sockets, flush and clean-up intervals, statistics):
  accepted and ignored, and listed;
- anything else is an error naming the key and its line, as is a value that does not parse (naming what is
  expected).
"""

from __future__ import annotations

from typing import Any

import attrs

from rocketspec.refimpl.broker.admin_runtime import JAVA_DEFAULTS
from rocketspec.refimpl.broker.config import BrokerConfig
from rocketspec.refimpl.broker.config_settings import BROKER_SETTINGS
from rocketspec.refimpl.properties import (
    JAVA_BOOLEAN,
    JAVA_INT,
    JAVA_LONG,
    JAVA_STRING,
    ConfigFileError,
    file_entries,
    java_setting,
)

#: Settings ``serve`` takes from its own options when they are not given on the command line.
SERVE_KEYS: dict[str, str] = {
    "listenPort": JAVA_INT,                       # --broker-port
    "brokerIP1": JAVA_STRING,                     # --advertise-host
    "aclEnable": JAVA_BOOLEAN,                    # --acl (true needs the plain_acl.yml)
    "serverChannelMaxIdleTimeSeconds": JAVA_INT,  # --idle-close
}

_MASTERS = "serve runs master brokers without slaves"
_NOT_MODELED = "the reference broker does not model it"
_POLICY = "the reference broker has RocketMQ's default"
#: Settings the reference broker runs at 4.9.8's default only: (Java type, why).
FIXED: dict[str, tuple[str, str]] = {
    "brokerId": (JAVA_LONG, _MASTERS),
    "brokerRole": (JAVA_STRING, _MASTERS + " (a SYNC_MASTER would wait for one)"),
    "enableDLegerCommitLog": (JAVA_BOOLEAN, "the reference broker has no DLedger commit log"),
    "useTLS": (JAVA_BOOLEAN, "serve speaks plain TCP"),
    "enableLmq": (JAVA_BOOLEAN, _NOT_MODELED),
    "enableMultiDispatch": (JAVA_BOOLEAN, _NOT_MODELED),
    "duplicationEnable": (JAVA_BOOLEAN, _NOT_MODELED),
    "filterSupportRetry": (JAVA_BOOLEAN, _NOT_MODELED),
    "filterServerNums": (JAVA_INT, _NOT_MODELED),
    "disableConsumeIfConsumerReadSlowly": (JAVA_BOOLEAN, _NOT_MODELED),
    "startAcceptSendRequestTimeStamp": (JAVA_LONG, _NOT_MODELED),
    "messageStorePlugIn": (JAVA_STRING, "the reference broker has no store plug-ins"),
    "configBlackList": (JAVA_STRING, _POLICY),
    "msgTraceTopicName": (JAVA_STRING, _POLICY),
    "deleteWhen": (JAVA_STRING, _POLICY + " (expired files go at 4 o'clock)"),
    "maxTransferCountOnMessageInMemory": (JAVA_INT, _POLICY),
    "maxTransferBytesOnMessageInMemory": (JAVA_INT, _POLICY),
    "maxTransferCountOnMessageInDisk": (JAVA_INT, _POLICY),
    "maxTransferBytesOnMessageInDisk": (JAVA_INT, _POLICY),
    "maxMsgsNumBatch": (JAVA_INT, _POLICY),
    "defaultQueryMaxNum": (JAVA_INT, _POLICY),
    "maxHashSlotNum": (JAVA_INT, _POLICY),
    "maxIndexNum": (JAVA_INT, _POLICY),
}

_NAMED_BY_SERVE: dict[str, tuple[str, ...]] = {
    "serve names its brokers (broker-a, broker-b, ...) and registers them with its own name server": (
        "brokerName", "namesrvAddr", "fetchNamesrvAddrByAddressServer", "rocketmqHome"),
    "the stores are in memory or under --data-dir (serve never touches a real broker's files)": (
        "storePathRootDir", "storePathCommitLog", "storePathDLedgerCommitLog", "readOnlyCommitLogStorePaths"),
    "serve runs no slaves and no DLedger group": (
        "brokerIP2", "haListenPort", "haMasterAddress", "haSendHeartbeatInterval", "haHousekeepingInterval",
        "haTransferBatchSize", "haSlaveFallbehindMax", "slaveTimeout", "accessMessageInMemoryMaxRatio", "dLegerGroup",
        "dLegerPeers", "dLegerSelfId", "preferredLeaderId", "enableBatchPush", "isEnableBatchPush"),
}
_DECIDED = {*BROKER_SETTINGS, *SERVE_KEYS, *FIXED, *(key for keys in _NAMED_BY_SERVE.values() for key in keys)}
#: Accepted and ignored, by reason; the last group is every other 4.9.8 broker property.
IGNORED: dict[str, tuple[str, ...]] = {
    **_NAMED_BY_SERVE,
    "thread pools, queues, sockets, flush and clean-up intervals, statistics: serve has its own bounds "
    "(--max-connections, --buffer-limit) and they change nothing a client sees": tuple(
        key for key in JAVA_DEFAULTS if key not in _DECIDED),
}
_IGNORED_KEYS = frozenset(key for keys in IGNORED.values() for key in keys)


@attrs.frozen
class BrokerFile:
    """What a broker configuration file sets: ``options`` (``BrokerConfig`` attributes, ``flush`` among them),
    ``serve`` (:data:`SERVE_KEYS` values by Java name), the keys ``ignored`` (in file order), and the line each
    key was last set on (``lines``)."""

    options: dict[str, Any]
    serve: dict[str, Any]
    ignored: tuple[str, ...]
    lines: dict[str, int]


def _typed(text: str, java_type: str) -> Any:
    try:
        return java_setting(text, java_type)
    except ValueError as error:
        raise ValueError(f"expected {error}") from None


def _setting(key: str, text: str) -> Any:
    """The ``BrokerConfig`` attribute value of ``key = text``; ``ValueError`` says what is wrong."""
    setting = BROKER_SETTINGS[key]
    value = _typed(text, setting.java_type)
    try:
        value = setting.to_attr(value)
        if setting.attr != "flush":  # the attribute's own rules (non-negative, non-empty, ...); flush is Cluster's
            attrs.evolve(BrokerConfig(broker_name="broker-a"), **{setting.attr: value})
    except ValueError as error:
        # The attribute's messages name it ("max_message_size must be ...", "message_delay_level '1x': ..."): the
        # file's line already names the key and the value.
        problem = str(error).replace(f"{setting.attr} {value!r}", "it").replace(setting.attr, "it", 1)
        raise ValueError(problem.removeprefix("it: ")) from None
    return value


def load_broker_file(text: str) -> BrokerFile:
    """Read a broker configuration file's text (see the module docstring); ``ConfigFileError`` (``line N: ...``)
    for a key that is not a 4.9.8 broker setting the reference broker takes, or a value it cannot take."""
    last = file_entries(text)
    options: dict[str, Any] = {}
    serve: dict[str, Any] = {}
    ignored: list[str] = []
    for key, entry in last.items():
        where = f"line {entry.line}: {key}"
        try:
            if key in BROKER_SETTINGS:
                options[BROKER_SETTINGS[key].attr] = _setting(key, entry.value)
            elif key in SERVE_KEYS:
                serve[key] = _typed(entry.value, SERVE_KEYS[key])
            elif key in FIXED:
                java_type, why = FIXED[key]
                if _typed(entry.value, java_type) != java_setting(JAVA_DEFAULTS[key], java_type):
                    raise ValueError(f"the reference broker takes only {JAVA_DEFAULTS[key]!r}: {why}")
            elif key in _IGNORED_KEYS:
                ignored.append(key)
            else:
                raise ConfigFileError(f"{where} is not a broker setting the reference broker models")
        except ValueError as error:
            if isinstance(error, ConfigFileError):
                raise
            raise ConfigFileError(f"{where} is {entry.value!r}: {error}") from None
    return BrokerFile(options, serve, tuple(ignored), {key: entry.line for key, entry in last.items()})
