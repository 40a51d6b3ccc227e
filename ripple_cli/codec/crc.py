"""CRC-32C for the envelope (reference section 1): the C extension's when
it is built (ripple_cli/codec/fast; tests check it against the crc32c
package), else the crc32c package.

The package is only imported when needed: importing it costs about 40 ms
(it reads its own version through importlib.metadata), a fifth of what
`ripple verify` needs for a 200,000-message stream.  RIPPLE_PURE=1 at
start-up selects the package.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable

from ripple_cli.codec.fast import speedups

Buffer = bytes | bytearray | memoryview | mmap.mmap  # mmap: a file's window (sources/files.py)


def _pick() -> Callable[[Buffer], int]:
    accel = speedups()
    if accel is not None:
        fast: Callable[[Buffer], int] = accel.crc32c
        return fast
    from crc32c import crc32c as package

    return package


crc32c = _pick()
