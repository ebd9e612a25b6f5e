#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What an engine does around an OCI runtime, for tests/integration/oci.sh.

  reap PIDFILE -- CMD...   as conmon: a child subreaper that runs CMD (the
                           runtime's create or exec --detach), then waits for
                           the pid CMD wrote to PIDFILE (reparented to us) and
                           prints "exited N" or "signaled N". With START=CMD
                           in the environment it also runs that (start ID)
                           once the pid is known.
  console SOCK OUT         listens on SOCK, receives one terminal (SCM_RIGHTS)
                           and copies what it reads to OUT until EOF/EIO.
"""
import array
import ctypes
import os
import shlex
import socket
import subprocess
import sys

PR_SET_CHILD_SUBREAPER = 36


def say(pidfile, text):
    with open(pidfile + ".status", "w") as f:
        f.write(text + "\n")


def reap(argv):
    pidfile, sep, cmd = argv[0], argv[1], argv[2:]
    assert sep == "--"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        say(pidfile, "prctl failed")
        return 2
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        say(pidfile, "runtime-failed %d" % r.returncode)
        return 1
    pid = int(open(pidfile).read())
    start = os.environ.get("START")
    if start:
        subprocess.run(shlex.split(start), check=True)
    while True:
        try:
            p, st = os.waitpid(-1, 0)
        except ChildProcessError:
            say(pidfile, "lost: the pid was not reparented to the subreaper")
            return 1
        if p == pid:
            break
    if os.WIFEXITED(st):
        say(pidfile, "exited %d" % os.WEXITSTATUS(st))
    else:
        say(pidfile, "signaled %d" % os.WTERMSIG(st))
    return 0


def console(argv):
    path, out = argv
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)
    c, _ = s.accept()
    fds = array.array("i")
    _, anc, _, _ = c.recvmsg(256, socket.CMSG_LEN(fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    c.close()
    if not fds:
        return 1
    with open(out, "wb", buffering=0) as o:
        while True:
            try:
                b = os.read(fds[0], 4096)
            except OSError:
                break
            if not b:
                break
            o.write(b)
    return 0


if __name__ == "__main__":
    sys.exit({"reap": reap, "console": console}[sys.argv[1]](sys.argv[2:]))
