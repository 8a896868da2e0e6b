#!/usr/bin/python3
"""safetensors_interop.py - the other side of test_checkpoint_interop.c.

Reads and writes safetensors files with the standard library only (struct,
json), as the format's specification describes them, so that tenferro's files
are checked by a reader that shares no code with it.

  safetensors_interop.py check FILE   checks a file tenferro wrote (exit 0 if right)
  safetensors_interop.py write FILE   writes the file tenferro then loads and checks

Both sides agree on the contents (row-major, a PyTorch user's view):
  "grid"   F64  [2, 3]     element [i][j] = 10 i + j + 0.5
  "cube"   F32  [3, 1, 2]  element [i][j][k] = 100 i + 10 j + k
  "counts" I32  [4]        element [i] = 7 i - 3
  "big"    I64  []         2^40 + 1
  "mask"   BOOL [2, 2]     element [i][j] = (i + j) even
  "empty"  F64  [0, 4]
  "wave"   C64  [2, 2]     element [i][j] = (i + 0.5) + (j - 1) 1j, (re, im) f32 pairs
and the metadata {"step": "7", "note": "caf\u00e9"}.
"""
import json
import struct
import sys

# dtype: (struct code of one part, element bytes, parts per element)
FORMATS = {
    "F64": ("d", 8, 1),
    "F32": ("f", 4, 1),
    "I32": ("i", 4, 1),
    "I64": ("q", 8, 1),
    "BOOL": ("?", 1, 1),
    "C64": ("f", 8, 2),
}


def parts(dtype, values):
    """The values as the file stores them: a complex one as its (re, im) pair."""
    if FORMATS[dtype][2] == 1:
        return values
    return [x for v in values for x in (v.real, v.imag)]


def expected():
    grid = [10 * i + j + 0.5 for i in range(2) for j in range(3)]
    cube = [100 * i + 10 * j + k for i in range(3) for j in range(1) for k in range(2)]
    counts = [7 * i - 3 for i in range(4)]
    mask = [(i + j) % 2 == 0 for i in range(2) for j in range(2)]
    wave = [complex(i + 0.5, j - 1.0) for i in range(2) for j in range(2)]
    return {
        "grid": ("F64", [2, 3], grid),
        "cube": ("F32", [3, 1, 2], [float(v) for v in cube]),
        "counts": ("I32", [4], counts),
        "big": ("I64", [], [2**40 + 1]),
        "mask": ("BOOL", [2, 2], mask),
        "empty": ("F64", [0, 4], []),
        "wave": ("C64", [2, 2], wave),
    }


META = {"step": "7", "note": "caf\u00e9"}


def fail(msg):
    print("safetensors_interop: " + msg, file=sys.stderr)
    sys.exit(1)


def check(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    if (8 + n) % 8:
        fail("the data does not start 8-byte aligned (header length %d)" % n)
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    data = blob[8 + n :]
    if header.pop("__metadata__", None) != META:
        fail("metadata differs")
    want = expected()
    if sorted(header) != sorted(want):
        fail("tensor names differ: %s" % sorted(header))
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        dtype, shape, values = want[name]
        if info["dtype"] != dtype or info["shape"] != shape:
            fail("%s: %s %s, expected %s %s" % (name, info["dtype"], info["shape"], dtype, shape))
        begin, stop = info["data_offsets"]
        if begin != end:
            fail("%s: begins at %d, the previous tensor ended at %d" % (name, begin, end))
        code, size, _ = FORMATS[dtype]
        if begin % size:
            fail("%s: not aligned to its element size" % name)
        want_parts = parts(dtype, values)
        got = list(struct.unpack("<%d%s" % (len(want_parts), code), data[begin:stop]))
        if got != want_parts:
            fail("%s: %s, expected %s" % (name, got, values))
        end = stop
    if end != len(data):
        fail("%d bytes after the last tensor" % (len(data) - end))


def write(path):
    header, chunks, at = {"__metadata__": META}, [], 0
    for name, (dtype, shape, values) in sorted(expected().items()):  # names in order, not sizes
        code, _, _ = FORMATS[dtype]
        flat = parts(dtype, values)
        raw = struct.pack("<%d%s" % (len(flat), code), *flat)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        chunks.append(raw)
        at += len(raw)
    text = json.dumps(header, ensure_ascii=True).encode("utf-8")  # \u escapes for the reader
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(b"".join(chunks))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "write"):
        fail("usage: safetensors_interop.py check|write FILE")
    (check if sys.argv[1] == "check" else write)(sys.argv[2])
