"""The safetensors file format, read and written with numpy alone (no safetensors package).

A file is an 8-byte little-endian header length N, N bytes of JSON, then the tensors' raw bytes.
The JSON maps each tensor's name to ``{"dtype", "shape", "data_offsets": [begin, end]}``
(offsets into the bytes after the header, little-endian, C order) and may hold a
``"__metadata__"`` map of strings. The tensors' bytes tile the data without gaps or overlaps.
Files written by the safetensors library read here, and the other way round.
"""

from __future__ import annotations

import json

import numpy as np

# safetensors' dtype names -> numpy's (little-endian); BF16 has no numpy dtype
DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U64": "<u8",
    "U32": "<u4",
    "U16": "<u2",
    "U8": "u1",
    "BOOL": "?",
}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}
HEADER_LIMIT = 100_000_000  # the library's own bound on a header's size
METADATA = "__metadata__"


class TensorFileError(ValueError):
    """The bytes are not a safetensors file (the message says what is wrong)."""


def dumps(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (name -> array), in name order: the same arrays and
    metadata give the same bytes."""
    header, chunks, offset = {}, [], 0
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("safetensors metadata maps strings to strings")
        header[METADATA] = dict(sorted(metadata.items()))
    for name in sorted(tensors):
        array = np.asarray(tensors[name])
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if dtype not in NAMES:
            raise TypeError(f"tensor '{name}': dtype {array.dtype} has no safetensors name")
        data = np.ascontiguousarray(array, dtype=dtype).tobytes()
        header[name] = {
            "dtype": NAMES[dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the library writes it
    return len(text).to_bytes(8, "little") + text + b"".join(chunks)


def header(blob: bytes) -> dict:
    """The JSON header of safetensors ``blob``, checked for its length and shape."""
    if len(blob) < 8:
        raise TensorFileError(f"{len(blob)} bytes: shorter than the 8-byte header length")
    size = int.from_bytes(blob[:8], "little")
    if size > HEADER_LIMIT or 8 + size > len(blob):
        raise TensorFileError(
            f"header length {size} does not fit the file ({len(blob)} bytes)"
        )
    try:
        parsed = json.loads(blob[8 : 8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TensorFileError(f"the header is not JSON: {err}") from err
    if not isinstance(parsed, dict):
        raise TensorFileError("the header is not a JSON object")
    return parsed


def loads(blob: bytes) -> dict[str, np.ndarray]:
    """The tensors of safetensors ``blob`` as numpy arrays (copies; name -> array)."""
    parsed = header(blob)
    data = memoryview(blob)[8 + int.from_bytes(blob[:8], "little") :]
    out, spans = {}, []
    for name, info in parsed.items():
        if name == METADATA:
            continue
        try:
            kind, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        except (TypeError, KeyError, ValueError) as err:
            raise TensorFileError(f"tensor '{name}': entry {info!r} lacks a field") from err
        if kind not in DTYPES:
            raise TensorFileError(f"tensor '{name}': dtype {kind} cannot be read with numpy")
        dtype = np.dtype(DTYPES[kind])
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(data) or end - begin != count * dtype.itemsize:
            raise TensorFileError(
                f"tensor '{name}': offsets [{begin}, {end}] do not hold {kind} {shape} "
                f"inside {len(data)} data bytes"
            )
        out[name] = np.frombuffer(data[begin:end], dtype).reshape(shape).copy()
        spans.append((begin, end))
    covered = 0
    for begin, end in sorted(spans):
        if begin != covered:
            raise TensorFileError(f"the tensors' bytes overlap or leave a gap at byte {covered}")
        covered = end
    if covered != len(data):
        raise TensorFileError(f"{len(data) - covered} bytes after the last tensor")
    return out


def metadata(blob: bytes) -> dict:
    """The ``__metadata__`` map of safetensors ``blob`` ({} when there is none)."""
    return dict(header(blob).get(METADATA) or {})
