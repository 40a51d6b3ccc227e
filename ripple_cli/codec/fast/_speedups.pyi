# Types of the C extension built from _speedups.c.

from typing import Any

CRC32C_IMPL: str  # "sse4.2" or "table"
LAYOUT: dict[str, object]  # the tables it was compiled with (layout.h); must equal layout.LAYOUT
REC_SEQ_ORDER: int
REC_BEFORE_SCHEMA: int
REC_DUPLICATE: int
REC_GAP: int

def crc32c(data: bytes | bytearray | memoryview, /) -> int: ...
def crc32c_shift(crc: int, n: int, /) -> int: ...
def resync(
    buf: bytes | bytearray,
    pos: int,
    end: int,
    final: bool,
    max_payload: int,
    base: int,
    prefixes: CrcPrefixes | None,
    /,
) -> tuple[int, int, CrcPrefixes | None]: ...
def crc32c_table(data: bytes | bytearray | memoryview, /) -> int: ...
def atom_text(atom: bytes, /) -> bytes: ...
def float_atom(x: float, /) -> bytes: ...
def to_string(sexp: object, /) -> bytes: ...

class CrcPrefixes:
    def __init__(self, origin: int) -> None: ...
    @property
    def origin(self) -> int: ...
    @property
    def covered(self) -> int: ...
    @property
    def marks(self) -> list[int]: ...
    def extend(self, buf: bytes | bytearray, base: int, upto: int, /) -> None: ...
    def upto(self, buf: bytes | bytearray, base: int, x: int, /) -> int: ...
    def crc(self, buf: bytes | bytearray, base: int, start: int, end: int, /) -> int: ...

class Program:
    def __init__(
        self,
        code: bytes,
        atoms: tuple[tuple[bytes, bool], ...],
        json: tuple[bytes, ...] | None = None,
        names: tuple[bytes, ...] | None = None,
    ) -> None: ...
    def key_text(self, data: bytes, /) -> bytes | None: ...
    def delta_text(self, data: bytes, /) -> bytes | None: ...
    def check(self, key: bytes, delta: bytes, /) -> bool: ...
    def key_json(self, data: bytes, /) -> bytes | None: ...
    def delta_json(self, data: bytes, /) -> bytes | None: ...

# RENDER_ROWS's text: (rows, int64 buffers, (offsets, data) pairs, bitmaps) (layout.py's ROW_*)
RowBuffers = tuple[int, tuple[bytes, ...], tuple[tuple[bytes, bytes], ...], tuple[bytes, ...]]

class Scanner:
    def __init__(
        self,
        max_payload: int,
        render: int,
        raw: bool,
        rules: bool,
        resolve: object,
        select: bool = False,
        tags: int = 0x3F,
        outputs: tuple[bytes, ...] | None = None,
        keys: tuple[bytes, ...] | None = None,
    ) -> None: ...
    def run(
        self,
        buf: bytes | bytearray,
        pos: int,
        end: int,
        base: int,
        last_seq: int | None,
        worker: bytes | None,
        applied: dict[tuple[bytes, bytes], int] | None,
        fresh: bool,
        /,
    ) -> tuple[
        int, int, int, tuple[int, int, int, int, int, int], int | None, bytes | RowBuffers | None, bytes, list[object]
    ]: ...

def read_handshake(payload: bytes, kinds: tuple[object, ...], /) -> Any: ...
def handshake_line(seq: int, time_ns: int, fingerprint: bytes, flags: int, payload: bytes, /) -> bytes | None: ...

class OutputSchemas:
    def __len__(self) -> int: ...
    def __getitem__(self, i: int, /) -> tuple[bytes, Any]: ...
    def get(self, fingerprint: bytes, /) -> Any: ...
