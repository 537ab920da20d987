"""The one way tensorlab's command lines end: with main()'s status, and quietly when their reader goes away."""

import os
import sys


def exit_with(main):
    """sys.exit(main()), ending quietly with 141 (128 + SIGPIPE, as a shell reports it) when stdout's reader left.

    `train.py generate RUN | head -1` closes the pipe while main() still prints. Where stdout is unbuffered
    the next print raises BrokenPipeError inside main(); where Python buffers it (a pipe, without
    PYTHONUNBUFFERED) the error comes only when the buffer is flushed, which is why the flush is done here,
    inside the try, and not by the interpreter on its way out ("Exception ignored ... BrokenPipeError", exit 120).
    """
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush into the pipe
        status = 141
    sys.exit(status)
