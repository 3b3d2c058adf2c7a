"""The plain-ACL request signature, one function for the signing client and the checking server.

``AclClientRPCHook.doBeforeRequest`` (4.9.8) adds ``AccessKey`` (and ``SecurityToken`` when it has one) to a request's
ext fields, then signs: the values of every ext field sorted by name (a ``TreeMap``: Java ``String`` order, UTF-16
code units), ``Signature`` left out, concatenated and UTF-8 encoded, followed by the body; HmacSHA1 keyed with the
secret key's UTF-8 bytes; Base64 (``AclUtils.combineRequestContent``, ``AclSigner.calSignature``). Any other field a
client adds before signing (the C++ client's ``OnsChannel``) is covered as well.

``PlainAccessValidator.parse`` recomputes the content on the broker without ``Signature`` and without
``_UNIQUE_KEY_QUERY`` (``MixAll.UNIQUE_MSG_QUERY_FLAG``) while the client signed the latter: a Java client's query by
unique key fails the check on a 4.9.8 broker, and here too (``server=True``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

from rocketspec.spec.protocol import ACL_ACCESS_KEY, ACL_SECURITY_TOKEN, ACL_SIGNATURE, UNIQUE_MSG_QUERY_FLAG


def _java_order(key: str) -> bytes:
    # Java's String.compareTo compares UTF-16 code units; big-endian UTF-16 bytes compare the same way.
    return key.encode("utf-16-be", errors="surrogatepass")


def acl_content(fields: Mapping[str, str], body: bytes | None, *, server: bool = False) -> bytes:
    """What is signed: the sorted field values (``Signature`` left out; ``server`` also leaves the unique-key query
    flag out, as the broker does) and then the body."""
    skipped = {ACL_SIGNATURE, UNIQUE_MSG_QUERY_FLAG} if server else {ACL_SIGNATURE}
    text = "".join(fields[key] for key in sorted(fields, key=_java_order) if key not in skipped)
    # String.getBytes(UTF-8) writes '?' for a lone surrogate; Python's "replace" does the same.
    return text.encode("utf-8", errors="replace") + (body or b"")


def acl_signature(content: bytes, secret_key: str) -> str:
    """``AclSigner.calSignature``: Base64 of HmacSHA1(content) keyed with the secret key."""
    digest = hmac.new(secret_key.encode("utf-8", errors="replace"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def signed_fields(fields: Mapping[str, str], body: bytes | None, access_key: str, secret_key: str,
                  security_token: str | None = None) -> dict[str, str]:
    """The ext fields of a request as ``AclClientRPCHook`` sends them: with ``AccessKey``, ``SecurityToken`` (if
    any) and ``Signature`` added."""
    out = dict(fields)
    out[ACL_ACCESS_KEY] = access_key
    if security_token is not None:
        out[ACL_SECURITY_TOKEN] = security_token
    out[ACL_SIGNATURE] = acl_signature(acl_content(out, body), secret_key)
    return out
