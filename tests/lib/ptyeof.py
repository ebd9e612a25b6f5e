#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs ARGV on a new terminal whose canonical buffer holds a pending
end-of-file marker (^D typed, nothing else), as script(1) leaves it when its
stdin ends; prints what the terminal showed, escaped (od -c style)."""
import os
import select
import subprocess
import sys
m, s = os.openpty()
os.write(m, b"\x04")  # canonical mode: a pending EOF marker in the slave's buffer
p = subprocess.Popen(sys.argv[1:], stdin=s, stdout=s, stderr=s, start_new_session=True,
                                      close_fds=True)
os.close(s)
out = b""
while True:
    r, _, _ = select.select([m], [], [], 30)
    if not r:
        break
    try:
        b = os.read(m, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
p.wait(timeout=30)
sys.stdout.write(repr(out) + "\n")
