"""Ctrl-C, SIGTERM and SIGHUP as a polite request to stop a run after the current step (STOP)."""

import os
import signal
import sys
import threading


def _say_from_a_signal_handler(line):
    """Write a line to stderr around Python's buffer: the signal may have come inside a print to stderr, and a
    buffered stream refuses a write from inside another ("reentrant call") where stderr is not unbuffered."""
    try:
        os.write(sys.stderr.fileno(), f"{line}\n".encode())
    except (AttributeError, OSError, ValueError):  # an in-memory stderr (a test's capture): no fd, no buffer to race
        print(line, file=sys.stderr)


class _StopOnSignal:
    """While active, a first Ctrl-C, SIGTERM or SIGHUP asks the loop to stop after the current step and save `latest`.

    `kill`, `docker stop`, a scheduler's pre-emption and a closed terminal send SIGTERM or SIGHUP:
    each is a polite request to stop, as Ctrl-C is. A second signal aborts at once (a KeyboardInterrupt):
    what is being written then is a temporary file, and the files already there stay whole. A signal ignored when
    the run starts stays ignored: `nohup` ignores SIGHUP and a shell's background job ignores Ctrl-C, so that
    closing the terminal or pressing Ctrl-C there leaves the run alone.
    """

    SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self):
        self.requested, self.signum, self._old = False, None, {}

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested, self.signum = True, signum
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        _say_from_a_signal_handler(f"\n{name}: saving a checkpoint after this step (a second signal aborts)")

    def exit_status(self):
        """128 + the signal's number, as a shell reports a process ended by it (130 for Ctrl-C)."""
        return 128 + (self.signum or signal.SIGINT)

    def __enter__(self):
        self.requested, self.signum = False, None
        if threading.current_thread() is threading.main_thread():
            for name in self.SIGNALS:
                number = getattr(signal, name, None)
                if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
                    self._old[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc):
        for number, handler in self._old.items():
            signal.signal(number, handler)
        self._old.clear()


STOP = _StopOnSignal()
