"""Opening the files the readers read: ``.gz`` decompressed as the file is read, and every failure to
read (a missing file, a corrupt or truncated gzip stream, text that is not UTF-8) an InputError naming
the file and the line of the (decompressed) text where reading stopped.

Every trace reader and the demand-curve reader read through ``open_source``, so no reader sees a
``zlib.error``, an ``EOFError`` or a ``UnicodeDecodeError``.

gzip (RFC 1952) is decompressed with zlib's own gzip wrapper (``wbits`` 16 + MAX_WBITS), which checks
the header, the CRC-32 and the length of every member, rather than with ``gzip.GzipFile``, because the
latter decompresses 128 KiB at a time and loses that output when it fails, so it cannot say where a
stream broke off. Members may follow one another and zero bytes may pad the end, as ``gzip.GzipFile``
reads them (CPython Lib/gzip.py:_GzipReader._read_eof).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from gpuplan.errors import InputError

GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib's gzip wrapper: header, CRC-32 and ISIZE checked
STEP_BYTES = 1 << 16  # compressed input read, and decompressed output made, at a time
HEADER_LIMIT = 1 << 20  # bytes of a first line read to tell a file's format


def is_gzip_name(path: Path) -> bool:
    return path.name.lower().endswith(".gz")


def _zlib_reason(exc: zlib.error) -> str:
    """``invalid block type`` of ``Error -3 while decompressing data: invalid block type``."""
    return str(exc).rsplit(": ", 1)[-1]


class Source:
    """A file's bytes, decompressed if its name ends in ``.gz``: ``read(size)`` as a binary file has.

    ``newlines`` counts the line breaks of the text delivered so far, so that a failure names line
    ``newlines + 1``: the line the text had reached when it broke off."""

    def __init__(self, path: Path, raw: BinaryIO) -> None:
        self.path = path
        self.raw = raw
        self.newlines = 0
        self._pieces = self._inflate() if is_gzip_name(path) else None
        self._held = b""  # decompressed bytes made but not yet read

    # -- reading -------------------------------------------------------------------------------------

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left when ``size`` < 0); b"" at the end."""
        if self._pieces is None:
            data = self._read_raw(size)
            self.newlines += data.count(b"\n")
            return data
        parts, have = [self._held], len(self._held)
        while size < 0 or have < size:
            piece = next(self._pieces, b"")
            if not piece:
                break
            parts.append(piece)
            have += len(piece)
        data = b"".join(parts)
        if 0 <= size < len(data):
            data, self._held = data[:size], data[size:]
        else:
            self._held = b""
        return data

    def _read_raw(self, size: int) -> bytes:
        try:
            return self.raw.read(size)
        except OSError as exc:
            raise self._error(f"cannot read: {exc.strerror or exc}") from None

    def _error(self, message: str, newlines: int | None = None) -> InputError:
        line = (self.newlines if newlines is None else newlines) + 1
        return InputError(message, path=self.path, line=line)

    # -- gzip ----------------------------------------------------------------------------------------

    def _inflate(self) -> Iterator[bytes]:
        """The decompressed text, in pieces of at most STEP_BYTES; counts ``newlines`` as it goes."""
        member: zlib._Decompress | None = None
        members = 0  # members begun
        data = b""
        while True:
            if not data:
                data = self._read_raw(STEP_BYTES)
                if not data:
                    break
            if member is None:
                if members:  # after a whole member: zero padding is allowed, then perhaps another member
                    data = data.lstrip(b"\0")
                    if not data:
                        continue
                member = zlib.decompressobj(GZIP_WBITS)
                members += 1
            before = member.copy()  # to find, should this step fail, the line where it does
            try:
                piece = member.decompress(data, STEP_BYTES)
            except zlib.error as exc:
                raise self._corrupt(exc, before, data, members) from None
            if member.eof:
                data, member = member.unused_data, None
            else:
                data = member.unconsumed_tail
            if piece:
                self.newlines += piece.count(b"\n")
                yield piece
        while member is not None and not member.eof:  # the input ended inside a member
            try:
                piece = member.decompress(member.unconsumed_tail, STEP_BYTES)
            except zlib.error as exc:
                raise self._corrupt(exc, member, b"", members) from None
            if not piece:
                raise self._error(
                    "cannot read: the gzip data ends before its end-of-stream marker (a truncated file?)"
                )
            self.newlines += piece.count(b"\n")
            yield piece

    def _corrupt(self, exc: zlib.error, before: zlib._Decompress, data: bytes, members: int) -> InputError:
        """The error for a step of decompression that failed: the step is made again from ``before``
        one output byte at a time, so the line counts every byte that decompresses before the fault."""
        newlines = self.newlines
        while data:
            try:
                piece = before.decompress(data, 1)
            except zlib.error:
                break
            if not piece and before.unconsumed_tail == data:
                break  # no progress: cannot happen, since the whole step failed; stop all the same
            newlines += piece.count(b"\n")
            data = before.unconsumed_tail
        reason = _zlib_reason(exc)
        if reason == "incorrect header check":
            message = (
                "cannot read: Not a gzipped file (gzip data starts with the bytes 1f 8b)"
                if members == 1
                else "cannot read: the data after the end of the gzip stream is not gzip"
            )
        elif reason in ("incorrect data check", "incorrect length check"):
            what = "CRC-32" if reason == "incorrect data check" else "length"
            message = f"cannot read: the gzip data is corrupt: the text up to here does not match its {what}"
        else:
            message = f"cannot read: corrupt gzip data ({reason})"
        return self._error(message, newlines)


@contextmanager
def open_source(path: Path) -> Iterator[Source]:
    """``path`` to read (``.gz`` decompressed); InputError if it does not exist or cannot be opened."""
    try:
        raw = path.open("rb")
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    with raw:
        yield Source(path, raw)


def read_bytes(path: Path) -> bytes:
    """All of ``path``'s (decompressed) bytes."""
    with open_source(path) as source:
        return source.read()


def first_line(path: Path, limit: int = HEADER_LIMIT) -> bytes:
    """The first line of ``path`` (decompressed), without its line break; at most ``limit`` bytes."""
    with open_source(path) as source:
        parts: list[bytes] = []
        have = 0
        while have < limit and (piece := source.read(min(STEP_BYTES, limit - have))):
            cut = piece.find(b"\n")
            if cut >= 0:
                parts.append(piece[:cut])
                break
            parts.append(piece)
            have += len(piece)
    return b"".join(parts)


def decode_utf8(data: bytes, path: Path) -> str:
    """``data`` as UTF-8 text (a byte-order mark dropped); InputError naming the line and column of the
    first byte that is not UTF-8."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} ({exc.reason})",
            path=path,
            line=line,
        ) from None
