#!/usr/bin/env python3
"""unpack_deb.py - `dpkg-deb -x DEB DIR` for a machine without dpkg (bench/gpu/run.sh).

A .deb is an ar archive holding debian-binary, control.tar.* and data.tar.*; this extracts
data.tar.* (gzip, xz, bzip2 or uncompressed, as Python's tarfile reads them) under DIR,
refusing members that would land outside DIR.

usage: python3 bench/gpu/unpack_deb.py DEB DIR
"""
import io
import os
import sys
import tarfile


def ar_members(data):
    """(name, bytes) of each member of an ar archive."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    pos = 8
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[0:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        pos += 60
        yield name, data[pos:pos + size]
        pos += size + (size & 1)  # members are 2-byte aligned


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    deb, dest = sys.argv[1], os.path.realpath(sys.argv[2])
    with open(deb, "rb") as f:
        data = f.read()
    for name, body in ar_members(data):
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
                for m in tar.getmembers():
                    target = os.path.realpath(os.path.join(dest, m.name))
                    if target != dest and not target.startswith(dest + os.sep):
                        sys.exit(f"unpack_deb.py: {deb}: member {m.name} leaves {dest}")
                # the "tar" filter (where Python has filters) keeps links, drops odd modes
                extra = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
                tar.extractall(dest, **extra)
            return
    sys.exit(f"unpack_deb.py: {deb}: no data.tar member")


if __name__ == "__main__":
    main()
