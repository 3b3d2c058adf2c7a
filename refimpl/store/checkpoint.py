"""The two small files that tell a reopened store where it stands (RocketMQ 4.9.8 ``StoreCheckpoint`` and the
``abort`` file of ``DefaultMessageStore``).

The checkpoint holds the commit-log offset every consume queue is written (and flushed) up to: recovery trusts the
queues up to there and re-dispatches the commit log after it. It is written only after what it covers is on the
disk (``flush.FlushService``). The abort file is present while a store is open: found at start, the last run did not
close cleanly (``recovered_abnormally``).
"""

from __future__ import annotations

import json

from rocketspec.refimpl.disk import Disk

CHECKPOINT_PATH = "store/checkpoint.json"
ABORT_PATH = "store/abort"  # present while a store is open: found at start, the last run did not close cleanly


def checkpoint_file(dispatched: int) -> tuple[str, bytes]:
    """The checkpoint's path and contents saying the consume queues cover the commit log up to ``dispatched``."""
    return CHECKPOINT_PATH, json.dumps({"dispatched": dispatched}).encode()


def read_checkpoint(disk: Disk) -> int:
    """The offset the checkpoint on the disk covers, -1 when there is none or it cannot be read (nothing trusted)."""
    raw = disk.read_file(CHECKPOINT_PATH)
    if raw is None:
        return -1
    try:
        value = json.loads(raw.decode("utf-8"))["dispatched"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return -1
    return value if isinstance(value, int) and value >= 0 else -1
