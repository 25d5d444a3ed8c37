"""A terminal for a process under test: what a person at it would see (pty(7))."""

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

COLUMNS = 120


def on_a_terminal(
    command: list[str], env: dict[str, str], cwd: Path
) -> tuple[subprocess.Popen[bytes], int]:
    """`command` started (in a session of its own) with its stdout and stderr on a terminal of
    COLUMNS columns: the process, and the terminal's side to read."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, COLUMNS, 0, 0))
    process = subprocess.Popen(
        command, stdout=terminal, stderr=terminal, env=env, cwd=cwd, start_new_session=True
    )
    os.close(terminal)
    return process, controller


def read_until(controller: int, pattern: str, seconds: float = 60) -> re.Match[str]:
    """What the terminal shows, read until `pattern` matches it (or the deadline passes)."""
    shown = ""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.5)
        if ready:
            try:
                shown += os.read(controller, 4096).decode(errors="replace")
            except OSError:  # the process is gone
                break
            if found := re.search(pattern, shown):
                return found
    raise AssertionError(f"{pattern!r} not shown in {seconds} s:\n{shown}")
