"""The sandbox's launcher: run as `python -I -S sandbox_launch.py UID N SRC1..SRCN -- BWRAP ARGS...`.

Started by the server (see sandbox.py), it prepares what bubblewrap cannot do unprivileged and then
becomes bwrap, so the sandboxed program never runs as the server's user:

- As root it makes a private mount namespace, opens every bind source (root can traverse the 0700
  data directory and the interpreter's folders; the sandbox uid cannot) and bind-mounts each one
  on a numbered entry of a fresh tmpfs staged over /dev/shm (in this private namespace only); the
  arguments `@<i>` become those entries, so bwrap binds them by a path it may traverse.
- It then drops to UID (no supplementary groups) and execs bwrap, which builds the user, pid, ipc,
  uts (and network) namespaces unprivileged: RLIMIT_NPROC holds for a non-root uid only, and a
  namespace escape lands on an account that owns nothing but the agents' workspace files.
- Not root (a service user), it cannot switch uid: bwrap gets the sources by path as they are.

Standard library only, no site packages: it runs before anything of the server could be imported.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
STAGE = "/dev/shm"  # exists on every Linux; covered by a tmpfs in this process's namespace only


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"sandbox launcher: {what}: {os.strerror(err)}")


def _stage(sources: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    # Opened in the new namespace (a bind from another namespace's mount is EINVAL) and before the
    # tmpfs covers STAGE, so a source under it stays reachable through its descriptor.
    fds = [os.open(path, os.O_PATH | os.O_CLOEXEC) for path in sources]
    _check(libc.mount(b"tmpfs", STAGE.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755"), "tmpfs on " + STAGE)
    for i, fd in enumerate(fds):
        target = f"{STAGE}/{i}"
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.mkdir(target, 0o755)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        _check(libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {sources[i]}")
        os.close(fd)


def main(argv: list[str]) -> None:
    uid, count = int(argv[1]), int(argv[2])
    sources = argv[3 : 3 + count]
    if argv[3 + count] != "--":
        raise SystemExit("sandbox launcher: bad arguments")
    command = argv[4 + count :]
    staged = os.geteuid() == 0 and uid > 0
    if staged:
        _stage(sources)
    # `@<i>` is the i-th source: its staged entry, or (not staged) the path itself
    command = [(f"{STAGE}/{a[1:]}" if staged else sources[int(a[1:])]) if a.startswith("@") and a[1:].isdigit() else a for a in command]
    if staged:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    os.execv(command[0], command)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except OSError as exc:  # one line for the tool's result, not a traceback with the server's paths
        sys.stderr.write(f"sandbox launcher: {exc.strerror or exc}\n")
        sys.exit(127)
