"""Process trees the run starts, and how to end them whole.

A worker makes itself the leader of a process group of its own
(`lead_own_group`), so that whatever it starts (inductor's compile
processes, the C++ compiler) is in that group: the parent ends the group,
not just the worker (`kill_tree`). A worker also ends its group when its
parent dies (`watch_parent`), so that a parent killed by SIGKILL leaves no
orphans either. And the parent can read how much CPU a worker's group used
and how much it read (`group_work`): a worker that computes is not hung.
"""

from __future__ import annotations

import _thread
import contextlib
import multiprocessing
import os
import signal
import sys
import time
from multiprocessing import connection
from multiprocessing.process import BaseProcess


def lead_own_group() -> None:
    """Make this process a process group's leader (POSIX; a no-op elsewhere)."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpgid(0, 0)


def watch_parent(interval: float = 0.5) -> None:
    """End this process's group once its parent is gone (a daemon thread polls)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        with contextlib.suppress(AttributeError, OSError):
            if os.getpgid(0) == os.getpid():  # only a group this process leads
                os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(1)

    # A bare thread, not `threading.Thread`: faulthandler prints every thread's stack when
    # a port crashes, and the report keeps the last 45 lines; this one takes 3 of them.
    _thread.start_new_thread(watch, ())


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except (AttributeError, OSError):
        return False


def kill_tree(process: BaseProcess) -> None:
    """SIGKILL a process and the group it leads; reap it.

    The group is killed before the process is reaped: while it is unreaped
    (or any of its group lives) its number cannot name another process."""
    if process.pid is None:
        return
    if process.exitcode is None and _leads_group(process.pid):
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
    elif process.is_alive():
        process.kill()
    process.join(timeout=10)


def end_group(process: BaseProcess, grace: float) -> None:
    """Wait up to `grace` seconds for a process to exit, then kill what is left of its group."""
    if process.pid is None:
        return
    connection.wait([process.sentinel], timeout=grace)
    # Exited or not, it is not reaped yet: its group number is still its own.
    if _leads_group(process.pid):
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
    if process.is_alive():
        process.kill()
    process.join(timeout=10)


def kill_children() -> None:
    """Kill every process this one started through multiprocessing, with their groups."""
    for child in multiprocessing.active_children():
        kill_tree(child)


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def group_work(leader: int) -> tuple[float, int] | None:
    """CPU seconds (user + system) and bytes read so far by a process and the live
    processes of the group it leads; None when this system cannot tell.

    The process itself counts before it leads a group (a worker imports before it calls
    `lead_own_group`). Bytes read count because loading a framework from a cold disk
    waits on reads, with little CPU. Linux reads /proc; elsewhere psutil, if installed.
    """
    if sys.platform.startswith("linux"):
        return _proc_work(leader)
    try:
        import psutil
    except ImportError:
        return None
    cpu, read = 0.0, 0
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError, AttributeError):
            if process.pid == leader or os.getpgid(process.pid) == leader:
                times = process.cpu_times()
                cpu += times.user + times.system
                read += process.io_counters().read_bytes
    return cpu, read


def _proc_work(leader: int) -> tuple[float, int]:
    ticks, read = 0, 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as file:
                fields = file.read().rsplit(b")", 1)[1].split()
            # fields[2] is the process group (field 5 of stat)
            if int(fields[2]) != leader and entry.name != str(leader):
                continue
            # utime, stime, and those of the children it waited for (fields 14-17):
            # a finished C++ compiler's time is counted in its parent's.
            ticks += sum(int(value) for value in fields[11:15])
            with open(f"/proc/{entry.name}/io", "rb") as file:
                counters = dict(line.split(b":") for line in file.read().splitlines())
            read += int(counters[b"rchar"]) + int(counters[b"read_bytes"])
        except (OSError, IndexError, KeyError, ValueError):
            continue  # it ended meanwhile, or hides its counters
    return ticks / _TICKS, read
