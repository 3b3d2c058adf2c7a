"""A served reference cluster recorded as a trace: ``rocketspec serve --trace`` and the ``rocketmq_server`` fixture.

```python
with TracedServer("traces/served", brokers=2, fmt="jsonl") as served:
    ...                                      # real clients against served.namesrv_addr
    served.flush_trace()                     # rows so far on disk (else written in batches)
# closed: the trace ends CUT (or served.end_trace("SETTLED") when every client caught up)
```

The brokers record their own events; what only the clients know (sends, pulls, retries as they asked for them) is
read off the wire into the same log (:class:`~rocketspec.traces.wiretap.WireEvents`, ``send_mode`` as there). Both are
handed to the server as its event sinks, so the reference implementation itself knows nothing of traces.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rocketspec.refimpl.served import ServedCluster
from rocketspec.traces.recording import TraceRecorder
from rocketspec.traces.schema import CUT
from rocketspec.traces.wiretap import WireEvents


class TracedServer(ServedCluster):
    """``ServedCluster`` whose run is recorded under ``out`` (None: not recorded, ``trace_dir`` None).

    ``fmt`` and ``trace_id`` (default ``served-<ms since the epoch>``) are the trace's; every other option is
    ``ServedCluster``'s."""

    def __init__(self, out: str | Path | None, *, fmt: str = "parquet", trace_id: str | None = None,
                 send_mode: str | None = None, **options: Any) -> None:
        self.trace_dir = Path(out) if out is not None else None
        self.recorder: TraceRecorder | None = None
        if self.trace_dir is not None:
            wire = WireEvents(None, server_events=True, send_mode=send_mode)
            # The brokers record every commit; those of no registered consumer are an administrator's (offset.reset).
            self.recorder = TraceRecorder(None, self.trace_dir, trace_id or f"served-{int(time.time() * 1000)}",
                                          fmt=fmt, rewrite=wire.admin_commits.rewrite)
            options["sinks"] = [*options.get("sinks", ()), self.recorder, wire]
            options["observers"] = [*options.get("observers", ()), wire]
        super().__init__(**options)

    def flush_trace(self) -> None:
        """Write the recorded rows so far to the trace directory (they are otherwise written in batches)."""
        if self.recorder is not None:
            self.submit(self.recorder.flush)

    def end_trace(self, status: str = CUT) -> None:
        """End the recorded trace now (``SETTLED`` only if every client caught up and nothing is in flight)."""
        recorder = self.recorder
        if recorder is not None:
            self.submit(lambda: recorder.record_trace_end(status))

    def close_trace(self) -> None:
        """End the recorded trace (``CUT`` unless ended) and write it and its manifests now; the server goes on
        serving, unrecorded (a test reads the trace of a run while the server is still up)."""
        recorder = self.recorder
        if recorder is not None:
            self.submit(recorder.close)
