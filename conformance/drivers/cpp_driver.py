"""Client conformance driver for the RocketMQ C++ client: PyPI ``rocketmq`` 0.4.4, which bundles librocketmq 1.2.3.

Run as ``rocketspec conformance client --exec "PYTHON .../conformance/drivers/cpp_driver.py"`` (PYTHON: one where
both rocketspec and rocketmq are installed): one process per client, configured by the ``ROCKETSPEC_*`` environment of
the driver contract (docs/conformance.md), printing one JSON object per line on stdout. Everything the library writes
goes to stderr or to its log files; the real stdout is kept for the JSON lines only.

What the client can be asked for, and how (librocketmq 1.2.3 through the package's C API):

- ``producer``: sync, async and oneway sends (``SendMessageSync/Async/Oneway``). ``ROCKETSPEC_RETRIES`` sets the
  library's ``retryTimes`` / ``retryTimes4Async`` to retries + 1 (it counts attempts, the Java client counts retries)
  through the exported ``DefaultMQProducer::setRetryTimes`` / ``setRetryTimes4Async`` (the C API has no setter).
  The send result of the C API has no queue, so the broker and queue of each send are read from the library's own
  debug log line ``send to mq:MessageQueue [...]`` written by the attempt that returned.
  ``ROCKETSPEC_LATENCY_FAULT=true`` is unsupported (librocketmq has no latency fault tolerance).
- ``consumer``: push consumer, clustering or broadcasting, concurrent or orderly listener, consume from first/last
  offset (through the exported ``DefaultMQPushConsumer::setConsumeFromWhere``). The listener answers
  ``RECONSUME_LATER`` (1; the orderly service reads it as SUSPEND_CURRENT_QUEUE_A_MOMENT) or ``CONSUME_SUCCESS``.
  The broker of a delivery is found from the message's store host (its offset message id) and the name server's
  cluster table (one GET_BROKER_CLUSTER_INFO at start, and again for a store host not seen before). A delivery's
  ``msgId`` is its UNIQ_KEY, else its offset message id as the broker writes it (librocketmq reverses the address
  bytes of the ids it computes).
- ``transaction-producer``: unsupported (the package's C API has no transaction producer; it came with 1.2.4).

The library logs under ``$HOME/logs/rocketmq-cpp`` and keeps broadcasting offsets under ``$HOME/.rocketmq_offsets``,
so the driver gives it a HOME of its own: ``$ROCKETSPEC_CPP_HOME``, else ``<tmp>/rocketspec-cpp-driver-<uid>``
(shared by runs, so a restarted broadcasting consumer finds its offsets). Its own log file is removed at exit, and
those of driver processes that are gone at start, unless ``ROCKETSPEC_CPP_KEEP_LOGS`` is set. SIGTERM shuts the
client down (bounded: the library may hang in shutdown) and the process exits 0. Exit status: 0 done or stopped,
1 the client could not be loaded or started, 2 a bad environment, 3 unsupported.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketspec.conformance.requests import cluster_info, json_body
from rocketspec.conformance.wire import WireClient
from rocketspec.spec.protocol import Property, ResponseCode

EXIT_OK = 0
EXIT_START_FAILED = 1
EXIT_BAD_ENV = 2
EXIT_UNSUPPORTED = 3
SHUTDOWN_BUDGET_S = 7.0  # the contract allows 10 s between SIGTERM and exit
# ConsumeFromWhere of librocketmq (include/ConsumeType.h): LAST_OFFSET is 0, FIRST_OFFSET 4.
CONSUME_FROM = {"last": 0, "first": 4}
# CConsumeStatus answers of the C listener.
CONSUME_SUCCESS = 0
RECONSUME_LATER = 1
LOG_LEVEL_DEBUG = 5  # CLogLevel E_LOG_LEVEL_DEBUG
# C++ members the C API does not reach (exported by librocketmq.so; the C handles are these objects).
SET_RETRY_TIMES = "_ZN8rocketmq17DefaultMQProducer13setRetryTimesEi"
GET_RETRY_TIMES = "_ZNK8rocketmq17DefaultMQProducer13getRetryTimesEv"
SET_RETRY_TIMES_ASYNC = "_ZN8rocketmq17DefaultMQProducer19setRetryTimes4AsyncEi"
GET_RETRY_TIMES_ASYNC = "_ZNK8rocketmq17DefaultMQProducer19getRetryTimes4AsyncEv"
SET_CONSUME_FROM = "_ZN8rocketmq21DefaultMQPushConsumer19setConsumeFromWhereENS_16ConsumeFromWhereE"
GET_CONSUME_FROM = "_ZN8rocketmq21DefaultMQPushConsumer19getConsumeFromWhereEv"
GET_OFFSET_MSG_ID = "_ZNK8rocketmq12MQMessageExt14getOffsetMsgIdEv"
SEND_TO_MQ = re.compile(r"send to mq:MessageQueue \[topic=(.*?), brokerName=(.*?), queueId=(-?\d+)\]")

# ------------------------------------------------------------------------------------------------------- output

_OUT_LOCK = threading.Lock()
_OUT: Any = None


def _claim_stdout() -> None:
    """Keep the real stdout for the JSON lines; anything else written to fd 1 (the library) goes to stderr."""
    global _OUT
    sys.stdout.flush()
    _OUT = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def emit(event: str, **fields: Any) -> None:
    line = json.dumps({"event": event, **fields}, separators=(",", ":"))
    with _OUT_LOCK:
        out = _OUT if _OUT is not None else sys.stdout
        out.write(line + "\n")
        out.flush()


def log(text: str) -> None:
    sys.stderr.write(f"cpp_driver: {text}\n")
    sys.stderr.flush()


def leave(code: int) -> None:
    """Exit without running the library's destructors (they may block or crash after shutdown)."""
    with _OUT_LOCK:
        if _OUT is not None:
            _OUT.flush()
    sys.stderr.flush()
    os._exit(code)


def unsupported(reason: str) -> None:
    emit("unsupported", reason=reason)
    leave(EXIT_UNSUPPORTED)


# ------------------------------------------------------------------------------------------------------- config


class BadEnvironment(Exception):
    pass


class Config:
    """The contract's environment, checked."""

    def __init__(self, env: dict[str, str]) -> None:
        def need(name: str) -> str:
            value = env.get(name, "")
            if not value:
                raise BadEnvironment(f"{name} is not set")
            return value

        def choice(name: str, default: str, allowed: tuple[str, ...]) -> str:
            value = env.get(name, "").strip().lower() or default
            if value not in allowed:
                raise BadEnvironment(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
            return value

        def integer(name: str, default: int, minimum: int) -> int:
            text = env.get(name, "").strip()
            if not text:
                return default
            try:
                value = int(text)
            except ValueError:
                raise BadEnvironment(f"{name} must be an integer, not {text!r}") from None
            if value < minimum:
                raise BadEnvironment(f"{name} must be >= {minimum}, not {value}")
            return value

        self.namesrv = need("ROCKETSPEC_NAMESRV")
        self.case = env.get("ROCKETSPEC_CASE", "")
        self.role = choice("ROCKETSPEC_ROLE", "", ("producer", "consumer", "transaction-producer"))
        self.topic = need("ROCKETSPEC_TOPIC")
        self.group = need("ROCKETSPEC_GROUP")
        self.count = integer("ROCKETSPEC_COUNT", 0, 0)
        self.instance = env.get("ROCKETSPEC_INSTANCE", "") or f"cpp-{os.getpid()}"
        self.send_mode = choice("ROCKETSPEC_SEND_MODE", "sync", ("sync", "async", "oneway"))
        self.send_timeout_ms = integer("ROCKETSPEC_SEND_TIMEOUT_MS", 3000, 1)
        self.retries = integer("ROCKETSPEC_RETRIES", 2, 0)
        self.latency_fault = choice("ROCKETSPEC_LATENCY_FAULT", "false", ("true", "false")) == "true"
        self.tags = env.get("ROCKETSPEC_TAGS", "")
        self.subscription = env.get("ROCKETSPEC_SUBSCRIPTION", "") or "*"
        self.model = choice("ROCKETSPEC_MESSAGE_MODEL", "clustering", ("clustering", "broadcasting"))
        self.orderly = choice("ROCKETSPEC_ORDERLY", "false", ("true", "false")) == "true"
        self.consume_from = choice("ROCKETSPEC_CONSUME_FROM", "last", ("first", "last"))
        self.consume_result = choice("ROCKETSPEC_CONSUME_RESULT", "success", ("success", "later", "later-once"))


def body_of(config: Config, index: int) -> str:
    return f"{config.topic}-{index}"


# ------------------------------------------------------------------------------------------------------ library


def library_home() -> Path:
    explicit = os.environ.get("ROCKETSPEC_CPP_HOME")
    home = Path(explicit) if explicit else Path(tempfile.gettempdir()) / f"rocketspec-cpp-driver-{os.getuid()}"
    home.mkdir(parents=True, exist_ok=True)
    return home


def member(dll: Any, symbol: str, restype: Any, *argtypes: Any) -> Any:
    """An exported C++ member function of librocketmq as a C function taking ``this`` first (None if absent)."""
    try:
        function = getattr(dll, symbol)
    except AttributeError:
        return None
    function.restype = restype
    function.argtypes = [ctypes.c_void_p, *argtypes]
    return function


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class LogTail:
    """The new lines of the library's log file of this process (it flushes every line)."""

    def __init__(self, home: Path) -> None:
        self.directory = home / "logs" / "rocketmq-cpp"
        self.prefix = f"{os.getpid()}_rocketmq-cpp.log"
        self.positions: dict[Path, int] = {}

    def files(self) -> list[Path]:
        return sorted(self.directory.glob(self.prefix + "*")) if self.directory.is_dir() else []

    def mark(self) -> None:
        for path in self.files():
            self.positions[path] = path.stat().st_size

    def new_lines(self) -> list[str]:
        lines: list[str] = []
        for path in self.files():
            start = self.positions.get(path, 0)
            with path.open("rb") as handle:
                handle.seek(start)
                data = handle.read()
            end = data.rfind(b"\n") + 1
            self.positions[path] = start + end
            lines.extend(data[:end].decode("utf-8", "replace").splitlines())
        return lines

    def last_queue(self, topic: str) -> tuple[str, int] | None:
        """Broker and queue of the last ``send to mq`` line of ``topic`` written since the last call."""
        found = None
        for line in self.new_lines():
            match = SEND_TO_MQ.search(line)
            if match and match[1] == topic:
                found = (match[2], int(match[3]))
        return found

    def prune(self) -> None:
        """Remove the log files of driver processes that are gone (a killed driver cannot remove its own)."""
        if not self.directory.is_dir():
            return
        for path in self.directory.glob("*_rocketmq-cpp.log*"):
            pid = path.name.split("_", 1)[0]
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                try:
                    path.unlink()
                except OSError:
                    pass
            except OSError:
                pass

    def remove(self) -> None:
        for path in self.files():
            try:
                path.unlink()
            except OSError:
                pass


class BrokerNames:
    """Broker name by store address, from the name server's cluster table (asked again for an unknown address)."""

    def __init__(self, namesrv: str) -> None:
        self.namesrv = namesrv
        self.by_addr: dict[str, str] = {}
        self.asked = 0.0
        self.lock = threading.Lock()

    def refresh(self) -> None:
        self.asked = time.monotonic()
        try:
            with WireClient(self.namesrv, 3.0) as client:
                answer = client.request(cluster_info())
            if answer.code != ResponseCode.SUCCESS:
                return
            info = json_body(answer) or {}
        except Exception as error:  # the lookup only names brokers in the report; never fatal
            log(f"cluster info from {self.namesrv} failed: {error}")
            return
        for name, data in (info.get("brokerAddrTable") or {}).items():
            for addr in (data.get("brokerAddrs") or {}).values() if isinstance(data, dict) else ():
                if isinstance(addr, str):
                    self.by_addr[addr] = name

    def name(self, addr: str) -> str | None:
        """The broker at ``addr`` (None when the name server does not list it)."""
        with self.lock:
            if addr not in self.by_addr and time.monotonic() - self.asked > 1.0:
                self.refresh()
            return self.by_addr.get(addr)


def store_addrs(offset_msg_id: str) -> tuple[str, str]:
    """host:port of the store host in an offset message id (IPv4: 4 address bytes, 4 port bytes) in both byte orders
    of the address: network order (what the broker writes), then reversed (what librocketmq 1.2.3 writes in the ids
    it computes itself on x86: 1.0.0.127 for 127.0.0.1)."""
    raw = bytes.fromhex(offset_msg_id[:16])
    port = int.from_bytes(raw[4:8], "big")
    return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}:{port}", f"{raw[3]}.{raw[2]}.{raw[1]}.{raw[0]}:{port}"


def locate(brokers: BrokerNames, offset_msg_id: str | None) -> tuple[str | None, str | None]:
    """The broker that stored a message, and its offset message id as the broker writes it, from the id the library
    computed (None, None when the id is not one)."""
    if not offset_msg_id or len(offset_msg_id) != 32:
        return None, None
    try:
        network, reversed_ = store_addrs(offset_msg_id)
    except ValueError:
        return None, None
    name = brokers.name(network)
    if name is not None:
        return name, offset_msg_id.upper()
    name = brokers.name(reversed_)
    fixed = offset_msg_id[6:8] + offset_msg_id[4:6] + offset_msg_id[2:4] + offset_msg_id[0:2] + offset_msg_id[8:]
    return name, (fixed if name is not None else offset_msg_id).upper()


# ------------------------------------------------------------------------------------------------------ running


class Stop:
    """Set by SIGTERM / SIGINT; the main thread waits on it."""

    def __init__(self) -> None:
        self.event = threading.Event()
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, _signum: int, _frame: Any) -> None:
        self.event.set()

    @property
    def requested(self) -> bool:
        return self.event.is_set()


def park_aborting_threads() -> None:
    """From now on a thread that calls abort() stops there instead of taking the process down.

    librocketmq's shutdown sometimes lets ``boost::thread_interrupted`` escape one of its own threads, and
    std::terminate aborts the process (apache/rocketmq-client-cpp issues 202 and 335). By then the events are
    written and the offsets persisted or not, which the cases check on the wire; the driver still reports the
    crash on stderr (the terminate message) but exits as the contract says. Armed only for shutdown."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
    # pause() as the handler: the aborting thread sleeps in it for good; the others go on to exit.
    libc.signal(signal.SIGABRT, ctypes.cast(libc.pause, ctypes.c_void_p).value)


def shutdown(stop_client: Callable[[], None]) -> None:
    """The client's shutdown on a helper thread, given up after SHUTDOWN_BUDGET_S (then the process just leaves)."""
    errors: list[str] = []
    park_aborting_threads()

    def run() -> None:
        try:
            stop_client()
        except Exception as error:
            errors.append(str(error))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(SHUTDOWN_BUDGET_S)
    if thread.is_alive():
        log(f"the client's shutdown did not return within {SHUTDOWN_BUDGET_S:g} s")
    elif errors:
        log(f"the client's shutdown failed: {errors[0]}")


def one_line(error: BaseException | str) -> str:
    return " ".join(str(error).split()) or type(error).__name__


STATUS_NAMES = {"OK": "SEND_OK"}


def send_fields(result: Any, where: tuple[str, int] | None) -> dict[str, Any]:
    status = result.status.name
    fields: dict[str, Any] = {"ok": True, "status": STATUS_NAMES.get(status, status), "msgId": result.msg_id,
                              "queueOffset": result.offset}
    if where is not None:
        fields["broker"], fields["queueId"] = where
    return fields


def run_producer(client: Any, dll: Any, config: Config, stop: Stop, tail: LogTail) -> int:
    if config.latency_fault:
        unsupported("librocketmq 1.2.3 has no latency fault tolerance (sendLatencyFaultEnable)")
    set_retries = member(dll, SET_RETRY_TIMES, None, ctypes.c_int)
    get_retries = member(dll, GET_RETRY_TIMES, ctypes.c_int)
    set_retries_async = member(dll, SET_RETRY_TIMES_ASYNC, None, ctypes.c_int)
    get_retries_async = member(dll, GET_RETRY_TIMES_ASYNC, ctypes.c_int)
    if None in (set_retries, get_retries, set_retries_async, get_retries_async):
        unsupported("this librocketmq exports no DefaultMQProducer::setRetryTimes / setRetryTimes4Async")
    producer = client.Producer(config.group, timeout=config.send_timeout_ms)
    producer.set_namesrv_addr(config.namesrv)
    dll.SetProducerInstanceName(producer._handle, config.instance.encode())
    dll.SetProducerLogLevel(producer._handle, LOG_LEVEL_DEBUG)  # the "send to mq" lines name each send's queue
    attempts = config.retries + 1  # librocketmq counts attempts, the contract (Java) counts retries
    set_retries(producer._handle, attempts)
    set_retries_async(producer._handle, attempts)
    if (get_retries(producer._handle), get_retries_async(producer._handle)) != (attempts, attempts):
        unsupported(f"librocketmq refused {attempts} send attempts (it allows 1 to 15)")
    try:
        producer.start()
    except Exception as error:
        log(f"producer start failed: {one_line(error)}")
        return EXIT_START_FAILED
    emit("started")
    messages = []
    for index in range(config.count):
        msg = client.Message(config.topic)
        if config.tags:
            msg.set_tags(config.tags)
        msg.set_keys(f"key-{index}")
        msg.set_body(body_of(config, index))
        messages.append(msg)
    if config.send_mode == "async":
        finished = _send_async(producer, config, stop, tail, messages)
    else:
        finished = _send_blocking(producer, config, stop, tail, messages)
    if finished:
        emit("done")
    shutdown(producer.shutdown)
    return EXIT_OK


def _send_blocking(producer: Any, config: Config, stop: Stop, tail: LogTail, messages: list[Any]) -> bool:
    for index, msg in enumerate(messages):
        if stop.requested:
            return False
        tail.mark()
        try:
            if config.send_mode == "oneway":
                producer.send_oneway(msg)
                fields: dict[str, Any] = {"ok": True}
                where = tail.last_queue(config.topic)
                if where is not None:
                    fields["broker"], fields["queueId"] = where
            else:
                result = producer.send_sync(msg)
                fields = send_fields(result, tail.last_queue(config.topic))
        except Exception as error:
            fields = {"ok": False, "error": one_line(error)}
        emit("send", index=index, **fields)
    return True


def _send_async(producer: Any, config: Config, stop: Stop, tail: LogTail, messages: list[Any]) -> bool:
    """Fire every send (the library picks the queue in the calling thread), then wait for the callbacks."""
    lock = threading.RLock()  # a callback may run inside send_async, on this thread
    pending = set(range(len(messages)))
    all_called = threading.Event()
    where: dict[int, tuple[str, int] | None] = {}

    def called(index: int, fields: dict[str, Any]) -> None:
        emit("send", index=index, **fields)
        with lock:
            pending.discard(index)
            if not pending:
                all_called.set()

    if not messages:
        all_called.set()
    for index, msg in enumerate(messages):
        if stop.requested:
            return False

        def on_success(result: Any, index: int = index) -> None:
            called(index, send_fields(result, where.get(index)))

        def on_error(error: BaseException, index: int = index) -> None:
            called(index, {"ok": False, "error": one_line(error)})

        tail.mark()
        try:
            with lock:  # a fast callback must find the queue already noted
                producer.send_async(msg, on_success, on_error)
                where[index] = tail.last_queue(config.topic)
        except Exception as error:
            called(index, {"ok": False, "error": one_line(error)})
    # Every callback comes within the send timeout of each attempt; wait a bounded multiple, or until stopped.
    deadline = time.monotonic() + (config.send_timeout_ms / 1000.0) * (config.retries + 1) + 10.0
    while not all_called.is_set() and not stop.requested and time.monotonic() < deadline:
        all_called.wait(0.1)
    if not all_called.is_set():
        with lock:
            missing = sorted(pending)
        for index in missing if not stop.requested else ():
            emit("send", index=index, ok=False, error="the async send never called back")
    return all_called.is_set() or not stop.requested


def run_consumer(client: Any, dll: Any, config: Config, stop: Stop) -> int:
    from rocketmq.exceptions import ffi_check
    from rocketmq.ffi import MessageModel

    set_from = member(dll, SET_CONSUME_FROM, None, ctypes.c_int)
    get_from = member(dll, GET_CONSUME_FROM, ctypes.c_int)
    get_offset_msg_id = member(dll, GET_OFFSET_MSG_ID, ctypes.c_void_p)
    if set_from is None or get_from is None:
        unsupported("this librocketmq exports no DefaultMQPushConsumer::setConsumeFromWhere")
    model = MessageModel.BROADCASTING if config.model == "broadcasting" else MessageModel.CLUSTERING
    consumer = client.PushConsumer(config.group, orderly=config.orderly, message_model=model)
    consumer.set_namesrv_addr(config.namesrv)
    consumer.set_instance_name(config.instance)
    set_from(consumer._handle, CONSUME_FROM[config.consume_from])
    if get_from(consumer._handle) != CONSUME_FROM[config.consume_from]:
        unsupported(f"librocketmq did not take consumeFromWhere {config.consume_from}")
    brokers = BrokerNames(config.namesrv)
    brokers.refresh()
    lock = threading.Lock()
    # A message is told by its id, body and born time together: librocketmq 1.2.3 makes the same unique ids in
    # processes started within the same second (its id prefix is seeded from the clock in seconds).
    seen: set[tuple[str, bytes, int]] = set()
    delivered = [0]

    def offset_msg_id(handle: int) -> str | None:
        if get_offset_msg_id is None:
            return None
        address = get_offset_msg_id(handle)  # const std::string&: its first word points at the characters
        if not address:
            return None
        return _text(ctypes.c_char_p.from_address(address).value)

    def on_message(_consumer: int, handle: int) -> int:
        # Answer the status ourselves: the package's subscribe() turns a Python exception into 0 (success).
        try:
            msg = client.RecvMessage(handle)
            broker, offset_id = locate(brokers, offset_msg_id(handle))
            # The message's id as the Java client gives it: its UNIQ_KEY, else its offset message id (which
            # librocketmq computes with the address bytes reversed; reported as the broker writes it).
            uniq = msg.get_property(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            msg_id = (_text(msg.id) if uniq else offset_id or _text(msg.id)) or ""
            body = msg.body or b""
            # A retry copy without UNIQ_KEY has an id of its own: it is told by the id of the message it copies.
            origin = None if uniq else _text(msg.get_property(Property.ORIGIN_MESSAGE_ID))
            identity = (origin or msg_id, body, msg.born_timestamp)
            with lock:
                first = identity not in seen
                seen.add(identity)
            emit("received", msgId=msg_id, topic=_text(msg.topic),
                 broker=broker, queueId=msg.queue_id,
                 queueOffset=msg.queue_offset, reconsumeTimes=msg.reconsume_times,
                 body=body.decode("utf-8", "replace"))
            with lock:
                delivered[0] += 1
                reached = config.count > 0 and delivered[0] == config.count
            if reached:
                emit("done")
        except Exception as error:
            log(f"listener failed: {one_line(error)}")
            return RECONSUME_LATER
        if config.consume_result == "later" or (config.consume_result == "later-once" and first):
            return RECONSUME_LATER
        return CONSUME_SUCCESS

    try:
        ffi_check(dll.Subscribe(consumer._handle, config.topic.encode(), config.subscription.encode()))
        consumer._register_callback(on_message)
        consumer.start()
    except Exception as error:
        log(f"consumer start failed: {one_line(error)}")
        return EXIT_START_FAILED
    emit("started")
    while not stop.event.wait(0.2):
        pass
    shutdown(consumer.shutdown)  # persists the offsets and unregisters the client
    return EXIT_OK


def main() -> int:
    _claim_stdout()
    try:
        config = Config(dict(os.environ))
    except BadEnvironment as error:
        log(f"bad environment: {error}")
        return EXIT_BAD_ENV
    if config.role == "transaction-producer":
        unsupported("the rocketmq package (librocketmq 1.2.3) has no transaction producer in its C API")
    stop = Stop()
    home = library_home()
    os.environ["HOME"] = str(home)  # read by the library (getenv) for its logs and local offsets
    try:
        import rocketmq.client as client  # loads librocketmq.so
        from rocketmq.ffi import dll
    except Exception as error:  # ImportError, OSError from dlopen
        log(f"the C++ client does not load: {type(error).__name__}: {error}")
        return EXIT_START_FAILED
    tail = LogTail(home)
    keep_logs = bool(os.environ.get("ROCKETSPEC_CPP_KEEP_LOGS"))
    if not keep_logs:
        tail.prune()
    try:
        if config.role == "producer":
            return run_producer(client, dll, config, stop, tail)
        return run_consumer(client, dll, config, stop)
    finally:
        if not keep_logs:
            tail.remove()


if __name__ == "__main__":
    leave(main())
