"""Process groups the run starts: their end when the parent dies, and their work.

An isolated process (`isolation.Child`) leads a process group of its own,
so that whatever it starts (inductor's compile processes, the C++ compiler)
is in that group, and the parent ends the group, not just the process.
It also ends its group when its parent dies (`watch_parent`), so that a
parent killed by SIGKILL leaves no orphans either. And the parent can read
how much CPU a group used and how much it read (`group_work`): a worker
that computes is not hung. A finished child ends with `exit_now`: as Python
exits, less the teardown of every module it loaded.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import os
import signal
import sys
import threading
import time


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


def exit_now(code: int) -> None:
    """Exit as the interpreter would, less its teardown of every module: with a framework
    loaded that teardown costs CPU and does nothing a finished process needs (measured here:
    0.15 to 1.8 CPU-s per process, by framework; paid by every worker, compare lane and
    bench process). Threads are joined and `atexit` handlers run first (the frameworks'
    shutdowns, the process ports' children, a scratch cache's removal), as at a normal
    exit, and the output is flushed."""
    join_threads = getattr(threading, "_shutdown", None)  # the first step of Python's exit
    if join_threads is not None:
        join_threads()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def group_work(leader: int) -> tuple[float, int] | None:
    """CPU seconds (user + system) and bytes read so far by a process and the live
    processes of the group it leads; None when this system cannot tell.

    The process itself counts even if it does not lead a group. Bytes read count
    because loading a framework from a cold disk waits on reads, with little CPU.
    Linux reads /proc; elsewhere psutil, if installed.
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
