"""Running a command under supervision, as tini does: in a process group of its own (the
terminal's foreground when this process holds it), every stop signal passed on to the
group, SIGKILL after a grace, its exit status (or 128 + the signal) returned, and nothing it
started left running."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

from mock_server.cli.options import EXIT_CANNOT_RUN, EXIT_FORCED, EXIT_NOT_FOUND

# Signals a run passes on to its command: the command decides how to stop, and the mock
# stops once it has.
_PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
KILL_AFTER_SECONDS = 10  # from a stop signal passed on (or COMMAND's end) to SIGKILL
# The limits of open files the process started with, when it raised its own (serve, run).
_STARTING_FILE_LIMIT: tuple[int, int] | None = None
_POLL_SECONDS = 0.02  # how often the run looks whether COMMAND has ended
_PR_SET_CHILD_SUBREAPER = 36  # prctl(2)


def remember_file_limit(limits: tuple[int, int] | None) -> None:
    """The limits of open files the process started with, before it raised its own for its
    server's connections: a command it runs starts with these."""
    global _STARTING_FILE_LIMIT
    _STARTING_FILE_LIMIT = limits


@dataclass(frozen=True)
class Ended:
    """How a command ended: its exit status (128 + N when signal N ended it, as a shell
    reports it) and that signal, which tells it apart from a command that itself exited
    with 128 + N."""

    status: int
    signal: int | None = None


def run_command(command: list[str], env: dict[str, str]) -> Ended:
    """Run `command` to its end, passing stop signals on; how it ended.

    COMMAND leads a process group of its own, always, and everything it starts is in it.
    On a terminal whose foreground this run holds, the group becomes the foreground: Ctrl-C
    reaches it from the terminal, once (this run does not see it, so does not pass it on),
    and Ctrl-Z stops it and this run with it, as a shell's job. Every stop signal this run
    gets goes to the whole group; `KILL_AFTER_SECONDS` later, whatever of the group still
    runs is killed (a second signal kills at once). When COMMAND ends, what it left running
    in its group (background jobs a shell does not stop on SIGINT) gets SIGTERM, and
    SIGKILL after the same grace: nothing the run started outlives it."""
    terminal = _foreground_terminal()
    _adopt_orphans()
    group: int | None = None
    signalled: list[int] = []  # stop signals received, in order
    deadline: float | None = None

    def pass_on(sig: int, frame: FrameType | None) -> None:
        nonlocal deadline
        signalled.append(sig)
        if group is None:
            return  # passed on as soon as the command has started
        _signal_group(group, signal.SIGKILL if len(signalled) > 1 else sig)
        if deadline is None:
            deadline = time.monotonic() + KILL_AFTER_SECONDS

    previous = {sig: signal.signal(sig, pass_on) for sig in _PASSED_ON}
    try:
        try:
            with _own_file_limit():
                child = subprocess.Popen(command, env=env, process_group=0)
        except FileNotFoundError:
            print(f"platform-mock: cannot run {command[0]}: command not found", file=sys.stderr)
            return Ended(EXIT_NOT_FOUND)
        except OSError as exc:
            print(f"platform-mock: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
            return Ended(EXIT_CANNOT_RUN)
        group = child.pid
        if terminal is not None:
            _hand_terminal(terminal, group)
        for sig in signalled[:1]:  # one that came while the command was starting
            _signal_group(group, sig)
            deadline = time.monotonic() + KILL_AFTER_SECONDS
        killed = False
        while not _has_ended(child.pid):
            if terminal is not None:
                _follow_stops(child.pid, terminal, group)
            if deadline is not None and time.monotonic() >= deadline and not killed:
                _signal_group(group, signal.SIGKILL)
                killed = True
            time.sleep(_POLL_SECONDS)
        if terminal is not None:
            _hand_terminal(terminal, os.getpgrp())
        # The group outlives its leader until its last member ends: end them, before the
        # leader is reaped and its id may be given to another process.
        _signal_group(group, signal.SIGTERM)
        returncode = child.wait()
        leftovers = _signal_group(group, 0)  # members besides COMMAND, ending or not
        if leftovers and not _group_ended(group, KILL_AFTER_SECONDS):
            _signal_group(group, signal.SIGKILL)
            _group_ended(group, KILL_AFTER_SECONDS)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if killed:
        print(
            f"platform-mock: {command[0]} did not stop within {KILL_AFTER_SECONDS} s of "
            f"{signal.Signals(signalled[0]).name}: killed (SIGKILL)",
            file=sys.stderr,
        )
    elif len(signalled) > 1:
        print(f"platform-mock: second stop signal: {command[0]} killed", file=sys.stderr)
    if leftovers:
        print(
            f"platform-mock: ended what {command[0]} left running in its process group",
            file=sys.stderr,
        )
    if returncode < 0:
        return Ended(EXIT_FORCED - returncode, -returncode)
    return Ended(returncode)


def _signal_group(group: int, sig: int) -> bool:
    """Send `sig` to every process of `group`; whether there was one."""
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member that changed its user (setuid): it is its own now
        return True
    return True


def _has_ended(pid: int) -> bool:
    """Whether the child has ended, without reaping it (its id stays its group's)."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


def _group_ended(group: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for every process of `group` to end; whether they did.
    Those handed to this process when their parent ended (`_adopt_orphans`) are reaped
    here: an ended process nobody reaps would still count as one of the group."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not _signal_group(group, 0):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_SECONDS)


def _adopt_orphans() -> None:
    """On Linux, become the parent of COMMAND's processes whose own parent ends first (a
    shell's background jobs), as `tini -s` does: this process then reaps them once they
    end. Otherwise they go to the system's first process, which in a container may never
    reap them, and an ended one would still count as a member of COMMAND's group."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _foreground_terminal() -> int | None:
    """The terminal (one of the standard streams) whose foreground this process group
    holds: the one whose Ctrl-C and Ctrl-Z are the user's; None when there is none (CI, a
    pipe, a run started in the background)."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                return fd
    return None


def _hand_terminal(fd: int, group: int) -> None:
    """Make `group` the terminal's foreground. A background process may do so only with
    SIGTTOU blocked (else the terminal stops it)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        with contextlib.suppress(OSError):  # the terminal went away (a closed window)
            os.tcsetpgrp(fd, group)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _follow_stops(pid: int, terminal: int, group: int) -> None:
    """Job control, for a run on a terminal: when Ctrl-Z stops COMMAND, stop this run too
    (its shell then shows the job as stopped) and, once continued (`fg`), give COMMAND the
    terminal back and continue it. A stop because COMMAND touched the terminal before it
    was handed the foreground is undone at once."""
    try:
        found = os.waitid(os.P_PID, pid, os.WSTOPPED | os.WNOHANG)
    except ChildProcessError:
        return
    if found is None or found.si_code != os.CLD_STOPPED:
        return
    if found.si_status not in (signal.SIGTTIN, signal.SIGTTOU):
        _hand_terminal(terminal, os.getpgrp())
        os.kill(os.getpid(), signal.SIGSTOP)  # returns when the shell continues this run
        _hand_terminal(terminal, group)
    _signal_group(group, signal.SIGCONT)


@contextlib.contextmanager
def _own_file_limit() -> Iterator[None]:
    """While COMMAND starts, the limit of open files this process started with: it raised
    its own for the server's connections (`raise_file_limit`), which COMMAND should not
    inherit."""
    if _STARTING_FILE_LIMIT is None:
        yield
        return
    raised = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, _STARTING_FILE_LIMIT)
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, raised)
