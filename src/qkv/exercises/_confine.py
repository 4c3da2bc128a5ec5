"""What a process that runs a learner's code does to itself before that code runs.

Used by the child that runs the learner's file (``_child.py``) and by the
process that runs the learner's SQL (``_sql_runner.py``). It needs only the
standard library: the SQL runner, started as ``python -I -S``, gets this
module's text from the checker, read when the checker started (see
``sql_softmax``).

* :func:`restrict_writes`, Linux Landlock (5.13 and later) through
  ``ctypes``: the process and everything it starts can no longer write a
  file outside one folder. Every write-type access (write to a file,
  truncate it, create, remove, rename or link anything) is denied except
  beneath the folders named and to the files named (``/dev/null``);
  reading is not restricted. On Landlock ABI 6 and later, signals and
  abstract Unix sockets cannot reach a process outside the domain: the
  learner's code cannot stop or kill the checker. The kernel also denies
  ptrace-mode access to processes outside the domain, which reading the
  checker's ``/proc/<pid>/mem`` needs (and its ``/proc/<pid>/environ``,
  for a process that is not root: measured on Linux 6.18, root still
  reads it; a user namespace, see ``_child.py``, closes that too).
* :func:`die_with_parent`: the kernel kills the process when its parent
  ends, however it ends (``PR_SET_PDEATHSIG``).
* :func:`limit`: address space and CPU time (``setrlimit``).

What Landlock does not cover: reading files, the network, and changes of
file metadata (``chmod``, ``utime``). Where there is no Landlock (not
Linux, Linux before 5.13, a kernel built or booted without it),
:func:`restrict_writes` changes nothing and returns 0.

Examples
--------
>>> from qkv.exercises import _confine
>>> _confine.landlock_abi() >= 0   # 0: no Landlock here
True
"""

import ctypes
import os
import signal
import sys

__all__ = ["landlock_abi", "restrict_writes", "die_with_parent", "limit"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every Linux architecture but alpha
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 1, 38

# Filesystem access rights, by the Landlock ABI that introduced them.
_WRITE_FILE = 1 << 1
_REMOVE_DIR, _REMOVE_FILE = 1 << 4, 1 << 5
_MAKE_CHAR, _MAKE_DIR, _MAKE_REG, _MAKE_SOCK = 1 << 6, 1 << 7, 1 << 8, 1 << 9
_MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = 1 << 10, 1 << 11, 1 << 12
_REFER = 1 << 13  # ABI 2: link or rename into another folder
_TRUNCATE = 1 << 14  # ABI 3
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),  # ABI 4
        ("scoped", ctypes.c_uint64),  # ABI 6
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in <linux/landlock.h>
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):
        return None


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers; 0 when there is none."""
    libc = _libc()
    if libc is None:
        return 0
    version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _write_rights(version: int) -> tuple[int, int]:
    """(rights beneath a folder, rights on a single file) that count as writing, on ABI ``version``."""
    on_files = _WRITE_FILE | (_TRUNCATE if version >= 3 else 0)
    on_folders = on_files | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG | _MAKE_SOCK
    on_folders |= _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM | (_REFER if version >= 2 else 0)
    return on_folders, on_files


def restrict_writes(folders: "list[str]", files: "tuple[str, ...]" = ("/dev/null",)) -> int:
    """Deny this process, and every process it starts, each write outside ``folders`` and ``files``.

    On Landlock ABI 6 and later, also deny it signals and abstract Unix
    sockets to processes outside its domain. Nothing can lift this later.

    Parameters
    ----------
    folders : list of str
        Folders beneath which writing stays allowed (``[]``: none at all).
    files : tuple of str, default ``("/dev/null",)``
        Single files that may still be written to (a missing one is skipped).

    Returns
    -------
    int
        The Landlock ABI version now enforced; 0 when nothing was restricted
        (no Landlock here, or the kernel refused) and the process is as before.
    """
    version = landlock_abi()
    libc = _libc()
    if version < 1 or libc is None:
        return 0
    on_folders, on_files = _write_rights(version)
    attr = _RulesetAttr(on_folders, 0, (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if version >= 6 else 0)
    size = ctypes.sizeof(attr) if version >= 6 else 16 if version >= 4 else 8
    ruleset = int(libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)))
    if ruleset < 0:
        return 0
    try:
        rules = [(path, on_folders) for path in folders]
        rules += [(path, on_files) for path in files if os.path.exists(path)]
        for path, rights in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(rights, fd)
                added = libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
            if added != 0:
                return 0
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return 0
        if libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            return 0
    except OSError:
        return 0
    finally:
        os.close(ruleset)
    return version


def die_with_parent(parent: "int | None") -> None:
    """On Linux, have the kernel SIGKILL this process when its parent ends, however it ends
    (a SIGTERM, a SIGKILL); end at once if ``parent`` (its pid, when known) has ended
    already. ``fork`` clears it: each process sets it for itself."""
    libc = _libc()
    if libc is None:
        return
    libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if parent is not None and os.getppid() != parent:  # the parent ended before the line above
        os._exit(0)


def limit(memory_bytes: int, cpu_seconds: int) -> None:
    """Limit this process's address space (0: no limit) and CPU time, where the system allows."""
    try:
        import resource
    except ImportError:  # not on this platform: documented
        return
    limits = [(resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_CORE, 0)]
    if memory_bytes > 0:
        limits.append((resource.RLIMIT_AS, memory_bytes))
    for which, value in limits:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError, OverflowError):  # not enforced here: documented
            pass
