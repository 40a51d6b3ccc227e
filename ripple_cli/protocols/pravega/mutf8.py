"""Java's modified UTF-8 (`DataOutput.writeUTF` / `DataInput.readUTF`).

Python has no codec for it.  It differs from UTF-8 in two ways: NUL is the
two bytes C0 80 (so a string never holds a zero byte), and a character
above U+FFFF is its UTF-16 surrogate pair, each half written as a 3-byte
sequence (no 4-byte sequences).  Strings decode to Python `str` with each
pair joined back into one character; a lone surrogate (legal in Java)
stays a lone surrogate.

Java's reader is laxer than its writer: it takes a raw 00 byte and
over-long 2- and 3-byte forms.  `decode` says whether the bytes are the
writer's exact encoding of the text (`canonical`), and whether Java would
read them at all (`valid`), so that the caller can keep the raw bytes
whenever the text alone would not give them back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModifiedUtf8:
    text: str
    canonical: bool  # encode(text) == the bytes
    valid: bool  # Java's readUTF accepts the bytes
    error: str = ""  # why not valid, or why not canonical


def encode(text: str) -> bytes:
    """The bytes `writeUTF` writes for `text` (without the u16 length)."""
    if text.isascii() and "\x00" not in text:
        return text.encode("ascii")
    out = bytearray()
    # UTF-16 code units: a character above U+FFFF becomes its surrogate pair.
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0 < c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    return bytes(out)


def decode(data: bytes) -> ModifiedUtf8:
    """Read `data` as `readUTF` does.  An invalid sequence ends the text
    there (`valid` False): Java throws UTFDataFormatException."""
    if data.isascii() and b"\x00" not in data:
        return ModifiedUtf8(data.decode("ascii"), True, True)
    units: list[int] = []
    i, n = 0, len(data)
    error = ""
    while i < n:
        c = data[i]
        high = c >> 4
        if high < 8:
            units.append(c)
            i += 1
        elif high in (12, 13):
            if i + 1 >= n or data[i + 1] & 0xC0 != 0x80:
                error = f"bad 2-byte sequence at byte {i}"
                break
            units.append(((c & 0x1F) << 6) | (data[i + 1] & 0x3F))
            i += 2
        elif high == 14:
            if i + 2 >= n or data[i + 1] & 0xC0 != 0x80 or data[i + 2] & 0xC0 != 0x80:
                error = f"bad 3-byte sequence at byte {i}"
                break
            units.append(((c & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F))
            i += 3
        else:
            what = "a 4-byte UTF-8 sequence (Java never writes one)" if high == 15 else "a continuation byte"
            error = f"{what} at byte {i}"
            break
    text = _from_units(units)
    if error:
        return ModifiedUtf8(text, False, False, error)
    if encode(text) != data:
        return ModifiedUtf8(text, False, True, "not the form Java writes (a raw 00 byte or an over-long sequence)")
    return ModifiedUtf8(text, True, True)


def _from_units(units: list[int]) -> str:
    raw = b"".join(u.to_bytes(2, "big") for u in units)
    # surrogatepass joins each high+low pair into one character and keeps
    # lone halves as lone surrogates.
    return raw.decode("utf-16-be", "surrogatepass")


def to_atom(text: str) -> bytes:
    """The text as a UTF-8 atom; a lone surrogate is written as its 3 bytes
    (not valid UTF-8, but `from_atom` reads it back)."""
    return text.encode("utf-8", "surrogatepass")


def from_atom(atom: bytes) -> str:
    return atom.decode("utf-8", "surrogatepass")
