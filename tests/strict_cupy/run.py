"""Run a script with the strict CuPy stand-in as `cupy`: python tests/strict_cupy/run.py train.py ARGS...

For subprocess tests of train.py on --device cuda without a GPU. With a real GPU the
stand-in is not installed and the script runs on the real one. At exit it prints the
device-to-host transfer counts to stderr as one line: `strict-cupy transfers: {...}`.
"""

import atexit
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for `strict_cupy`
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))  # the checkout, for tensorlab

import strict_cupy  # noqa: E402

if strict_cupy.install():
    atexit.register(
        lambda: print(f"strict-cupy transfers: {dict(strict_cupy.cupy_standin.transfers)}", file=sys.stderr)
    )
script, sys.argv = sys.argv[1], sys.argv[1:]
sys.path.insert(0, str(Path(script).resolve().parent))
runpy.run_path(script, run_name="__main__")
