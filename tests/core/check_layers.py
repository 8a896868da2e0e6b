#!/usr/bin/env python3
"""check_layers.py - the core's layers call nothing above them.

The core (core/src) is a stack of layers, one folder and one object library each
(core/src/README.md). The build already refuses an upward #include: a folder sees
only its own header and those below. This test checks the other half on the
object files themselves: every undefined symbol an object of layer L needs that
another core object defines must be defined in L or in a layer below it.

Usage: check_layers.py --layer NAME OBJ:OBJ:... [--layer NAME OBJ:...]...
(layers bottom first; nm from binutils reads the objects).
"""
import subprocess
import sys


def symbols(obj):
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRCV":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
    return defined, undefined


def main(argv):
    layers = []  # (name, [objects]) bottom first
    i = 0
    while i < len(argv):
        if argv[i] != "--layer" or i + 2 >= len(argv) + 1:
            print(__doc__)
            return 2
        layers.append((argv[i + 1], [o for o in argv[i + 2].split(":") if o]))
        i += 3
    level, owner = {}, {}
    objs = []
    for rank, (name, files) in enumerate(layers):
        level[name] = rank
        for f in files:
            d, u = symbols(f)
            objs.append((name, f, u))
            for s in d:
                owner[s] = name
    bad = 0
    for name, f, undefined in objs:
        for s in sorted(undefined):
            up = owner.get(s)
            if up is not None and level[up] > level[name]:
                print(f"{f.split('/')[-1]} (layer {name}) calls {s}, defined in layer {up} above it")
                bad += 1
    names = ", ".join(n for n, _ in layers)
    print(f"check_layers: {len(objs)} objects in {len(layers)} layers ({names}): "
          f"{bad} upward reference(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
