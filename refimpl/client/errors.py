"""Client exceptions (``MQClientException``, ``MQBrokerException``, ``RemotingTooMuchRequestException``).

Transport failures are the ``RemotingError`` subclasses of ``rocketspec.refimpl.remoting`` (connect, send, timeout);
``RemotingTooMuchRequestError`` is also one of them, as in Java, where the send budget running out is reported as a
``RemotingTooMuchRequestException``.
"""

from __future__ import annotations

from rocketspec.refimpl.remoting import RemotingError
from rocketspec.spec.protocol import ClientErrorCode


class MQClientError(Exception):
    """A client-side failure (``MQClientException``): bad input, no route, all attempts failed.

    ``code`` is the response or ``ClientErrorCode`` RocketMQ attaches (``-1`` when none); ``cause`` the last failure.
    """

    def __init__(self, message: str, *, code: int = -1, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.cause = cause
        if cause is not None:
            self.__cause__ = cause


class MQBrokerError(Exception):
    """A broker answered with an error code (``MQBrokerException``)."""

    def __init__(self, code: int, remark: str | None, broker_addr: str | None = None) -> None:
        super().__init__(f"CODE: {code}  DESC: {remark}" + (f"  BROKER: {broker_addr}" if broker_addr else ""))
        self.code = code
        self.remark = remark
        self.broker_addr = broker_addr


class RemotingTooMuchRequestError(RemotingError):
    """The time budget of a call ran out before it was sent (``RemotingTooMuchRequestException``)."""


class RemotingCommandError(RemotingError):
    """A response could not be decoded (``RemotingCommandException``): a missing or malformed header field."""


__all__ = ["ClientErrorCode", "MQBrokerError", "MQClientError", "RemotingCommandError", "RemotingError",
           "RemotingTooMuchRequestError"]
