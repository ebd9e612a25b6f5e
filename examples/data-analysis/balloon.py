#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# A second analysis that tries to load 30 GB into memory, 64 MiB at a time
# (really written, so every page counts against the limit).
import sys
chunks, total = [], 0
try:
    while total < (30 << 30):
        chunks.append(b"\x01" * (64 << 20))
        total += 64 << 20
    print("balloon: loaded 30 GiB")
except MemoryError:
    print(f"balloon: MemoryError after {total >> 20} MiB: the load failed cleanly")
    sys.exit(1)
