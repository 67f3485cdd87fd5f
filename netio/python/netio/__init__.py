# SPDX-License-Identifier: MIT
"""netio for Python: netio's sockets, publish/subscribe and scheduled push (docs/guide/python.md).

    import netio
    with netio.Context() as ctx:
        with netio.HighThroughputReceiveSocket(ctx, "tcp://127.0.0.1:0") as receiver:
            ...

Blocking calls release the GIL while they wait and stop for Ctrl-C; handlers run on the
context's event-loop thread with the GIL taken. Received data are memoryviews over netio's
pages (no copy): valid during a handler's call, or until the Message is released.
"""
import atexit as _atexit

from ._netio import (  # noqa: F401  (re-exported)
    Assignment,
    Backpressure,
    ClosedError,
    Context,
    Endpoint,
    Errc,
    Error,
    HighThroughputReceiveSocket,
    HighThroughputSendSocket,
    LentBuffer,
    LowLatencyReceiveSocket,
    LowLatencySendSocket,
    Message,
    Mode,
    Peer,
    Publication,
    PublishSocket,
    SchedulerMode,
    SubscribeSocket,
    Timeslice,
    TimesliceReceiver,
    TimesliceSender,
    TimeoutError,
    __version__,
)
from ._netio import _close_all_contexts

# Contexts still open when the interpreter exits are closed before its threads stop: a loop
# thread that wanted the GIL for a handler then would wait for ever.
_atexit.register(_close_all_contexts)

__all__ = [
    "Backpressure", "ClosedError", "Context", "Endpoint", "Errc", "Error", "HighThroughputReceiveSocket",
    "HighThroughputSendSocket", "LentBuffer", "LowLatencyReceiveSocket", "LowLatencySendSocket", "Message", "Mode",
    "Peer", "Publication", "PublishSocket", "SchedulerMode", "SubscribeSocket", "Timeslice", "TimesliceReceiver",
    "TimesliceSender", "TimeoutError", "__version__",
]
