"""``tbprof serve`` with waitress's output buffering scaled down, for tests only.

A response blocks its task thread once more than ``outbuf_high_watermark`` (16 MiB) waits
for the client, plus what the kernel's socket buffers hold (up to ~4 MiB on Linux loopback).
The demo profiles' largest answer is a ~1 MB trace window, so the write-timeout test shrinks
both (64 KiB each) to make that answer behave as a >20 MiB one does with the defaults.
Everything else is the real command: ``python small_buffers_serve.py serve --logdir ...``.
"""

from __future__ import annotations

import socket

import waitress.adjustments

from tbprof.cli.main import entry

OUTBUF_HIGH_WATERMARK_BYTES = 64 << 10
SEND_BUFFER_BYTES = 64 << 10

if __name__ == "__main__":
    adjustments = waitress.adjustments.Adjustments
    adjustments.outbuf_high_watermark = OUTBUF_HIGH_WATERMARK_BYTES
    # Applied to every accepted connection (waitress's set_socket_options): a fixed send
    # buffer instead of the kernel's autotuning up to tcp_wmem's maximum.
    adjustments.socket_options = [*adjustments.socket_options,
                                  (socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)]
    entry()
