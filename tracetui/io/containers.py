"""What a file is by its first bytes, before any format looks at it: a compressed stream that
tracetui inflates (gzip; zstd where a decoder is installed), or a container or text encoding
it does not read (zip, bzip2, xz, lz4, 7-Zip, tar, UTF-16/32 text), with one line saying
what it is and what to do.

:func:`compression_of` is the one place that tells compressions apart by their magic bytes;
:func:`unreadable` the one place that names what tracetui does not read.  Both look at a few
bytes only.  Light: no import beyond the standard library (it runs on every file opened).
"""

from __future__ import annotations

import importlib
from types import ModuleType

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
UTF8_BOM = b"\xef\xbb\xbf"

#: the compressions tracetui inflates: name -> magic bytes
READABLE = {"gzip": GZIP_MAGIC, "zstd": ZSTD_MAGIC}

#: (magic bytes, what the file is, what to do) of containers tracetui does not open
_NOT_READ = (
    (b"PK\x03\x04", "is a zip archive", "unzip it first"),
    (b"PK\x05\x06", "is an empty zip archive", "unzip it first"),
    (b"BZh", "is bzip2-compressed", "decompress it first (bunzip2 -k)"),
    (b"\xfd7zXZ\x00", "is xz-compressed", "decompress it first (xz -dk)"),
    (b"\x04\x22\x4d\x18", "is lz4-compressed", "decompress it first (lz4 -d)"),
    (b"\x02\x21\x4c\x18", "is lz4-compressed (legacy frame)", "decompress it first (lz4 -d)"),
    (b"7z\xbc\xaf\x27\x1c", "is a 7-Zip archive", "extract it first (7z x)"),
)

#: byte order marks, longest first (a UTF-32LE mark starts with the UTF-16LE one)
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"))
#: bytes of content an encoding without a byte order mark is judged by
_ENCODING_SAMPLE = 64

#: the modules that give the ``compression.zstd`` API: the standard library's (Python 3.14+),
#: else its backport (``pip install tracetui[zstd]``)
ZSTD_MODULES = ("compression.zstd", "backports.zstd")
#: what a user without either is told
ZSTD_MISSING = "is zstd-compressed: install tracetui[zstd] to open it, or decompress it first (zstd -d)"


def compression_of(raw: bytes) -> str | None:
    """``"gzip"`` or ``"zstd"`` when ``raw`` (a file's first bytes) starts a stream tracetui
    inflates; None otherwise (plain content, or a container it does not read)."""
    for name, magic in READABLE.items():
        if raw.startswith(magic):
            return name
    return None


def zstd_module() -> ModuleType | None:
    """The ``compression.zstd`` API (:data:`ZSTD_MODULES`), or None when neither is installed."""
    for name in ZSTD_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def unreadable(raw: bytes, content: bytes | None = None) -> str | None:
    """What a file that tracetui does not read is, and what to do, in one line (``"is a zip
    archive: unzip it first"``); None when it may be read.  ``raw``: its first bytes on disk;
    ``content``: for a compressed file, the first bytes it decompresses to (to name a tar
    archive or UTF-16 text inside a gzip file)."""
    for magic, what, todo in _NOT_READ:
        if raw.startswith(magic):
            return f"{what}: {todo}"
    compression = compression_of(raw)
    if compression == "zstd" and zstd_module() is None:
        return ZSTD_MISSING
    found = _archive_or_encoding((content or b"") if compression else raw)
    if found is None:
        return None
    what, todo = found
    if not compression:
        return f"is {what}: {todo}"
    if what.endswith("text"):
        todo = f"decompress it, then {todo}"
    return f"is {what}, {compression}-compressed: {todo}"


def _archive_or_encoding(data: bytes) -> tuple[str, str] | None:
    """(what ``data`` is, what to do) for a tar archive or text that is not UTF-8; else None."""
    if data[257:262] == b"ustar":
        return "a tar archive", "extract it first (tar -xf)"
    encoding = text_encoding(data)
    if encoding is None:
        return None
    return f"{encoding} text", f"convert it to UTF-8 (iconv -f {encoding} -t UTF-8)"


def text_encoding(data: bytes) -> str | None:
    """``"UTF-16"``/``"UTF-32"`` (a byte order mark) or ``"UTF-16LE"``, ``"UTF-16BE"``,
    ``"UTF-32LE"``, ``"UTF-32BE"`` (no mark: ASCII text with NULs between its bytes, at
    least 4 characters) for text that is not UTF-8; None otherwise.  NUL padding (every
    byte NUL) is none of them."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    sample = data[:_ENCODING_SAMPLE]
    for width, family in ((4, "UTF-32"), (2, "UTF-16")):
        n = len(sample) // width * width
        if n < 4 * width:
            continue
        for order, pos in (("LE", 0), ("BE", width - 1)):
            chars = sample[pos:n:width]
            others = b"".join(sample[k:n:width] for k in range(width) if k != pos)
            if 0 not in chars and not others.strip(b"\x00"):
                return family + order
    return None
