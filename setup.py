"""Only the optional C extension; the metadata is in pyproject.toml.

`ripple_cli.codec.fast._speedups` is the codec's fast lane (see
ripple_cli/codec/fast/__init__.py).  It needs a C compiler and the Python
headers; without them the build goes on without it (`optional=True`) and
ripple runs on its pure-Python codec, with the same results.
"""

from setuptools import Extension, setup

FAST = "ripple_cli/codec/fast"

setup(
    ext_modules=[
        Extension(
            "ripple_cli.codec.fast._speedups",
            sources=[f"{FAST}/_speedups.c"],
            depends=[
                f"{FAST}/{h}.h"
                for h in ("binprot", "crc32c", "handshake", "jsonout", "layout", "rowsout", "sexpout", "tableout")
            ],
            optional=True,
        ),
        # SIGBUS in the mmap windows a file is read through (ripple_cli/sources/files.py reads without them).
        Extension("ripple_cli.sources._mapguard", sources=["ripple_cli/sources/_mapguard.c"], optional=True),
        # The tap relay's event loop (ripple_cli/tap/relay.py runs its asyncio one without it).
        Extension("ripple_cli.tap._relayloop", sources=["ripple_cli/tap/_relayloop.c"], optional=True),
    ]
)
