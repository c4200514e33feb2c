"""The protobuf wire format, decoded by hand: the pprof profiles of ``save_device_memory_profile``
and the XSpace of the JAX profiler (``*.xplane.pb``) are read without protobuf or their ``.proto``
files (hourly runs where neither is installed)."""

from __future__ import annotations

from typing import Iterator


class ProfileFormatError(ValueError):
    """The bytes are not a (gzip'd) pprof profile or a trace we understand."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProfileFormatError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProfileFormatError("varint too long")


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def iter_fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(field_number, wire_type, value)``; value is an int or the bytes of a LEN field."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ProfileFormatError("truncated length-delimited field")
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise ProfileFormatError(f"unsupported wire type {wire}")
        yield number, wire, value


def _num(value: int | bytes) -> int:
    """An integer field's value; a length-delimited one in its place is no pprof profile."""
    if isinstance(value, bytes):
        raise ProfileFormatError("a length-delimited field where an integer was expected")
    return value


def _sub(value: int | bytes) -> bytes:
    """A length-delimited field's bytes; an integer in its place is no pprof profile."""
    if isinstance(value, int):
        raise ProfileFormatError("an integer field where a length-delimited one was expected")
    return value


def _ints(value: int | bytes) -> list[int]:
    """A repeated integer field: packed (LEN, bytes) or one unpacked value."""
    if isinstance(value, int):
        return [value]
    out: list[int] = []
    pos = 0
    while pos < len(value):
        v, pos = _varint(value, pos)
        out.append(v)
    return out


