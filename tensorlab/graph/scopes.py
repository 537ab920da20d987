"""Which modules made each op, noted while `record()` is on, so the graph can draw each module call as one box.

    with tg.record():
        _, loss = model(ids, ids)
    graph = tg.capture(loss)          # the ops made inside blocks.1.attn are grouped under it (groups.py)

Inside the block each Module call pushes (name path, class name, call number) onto a per-thread stack, and each
Function that records a graph keeps a copy of that stack as `.scope`, outermost module first. Outside the block
neither happens: Module.__call__ and Function.__call__ find their hook lists (`tensorlab.nn.module.call_hooks`,
`tensorlab.tensor.record_observers`) empty, so training pays nothing for the viewer.
"""

import contextlib
import itertools
import threading

from tensorlab.nn import module
from tensorlab.tensor import record_observers

_calls = itertools.count()  # numbers each call, so two calls of one module are two boxes in the graph


class _ModuleStack(threading.local):
    """The Modules whose forward is running in this thread, outermost first, and their (path, class, call)."""

    def __init__(self):
        self.modules, self.entries = [], []


module_stack = _ModuleStack()
_open_blocks = 0  # record() blocks open, in all threads: the hooks are installed while there is one
_lock = threading.Lock()


@contextlib.contextmanager
def record():
    """Ops made inside the block (in any thread) remember the modules running when they were made (`fn.scope`)."""
    global _open_blocks
    with _lock:
        if _open_blocks == 0:
            module.call_hooks.append(_module_call)
            record_observers.append(_remember_scope)
        _open_blocks += 1
    try:
        yield
    finally:
        with _lock:
            _open_blocks -= 1
            if _open_blocks == 0:
                module.call_hooks.remove(_module_call)
                record_observers.remove(_remember_scope)


@contextlib.contextmanager
def _module_call(m):
    """Module.__call__'s hook: `m` is on the stack while its forward runs, and off it after, even on an error."""
    module_stack.entries.append((_path(m), type(m).__name__, next(_calls)))
    module_stack.modules.append(m)
    try:
        yield
    finally:
        module_stack.modules.pop()
        module_stack.entries.pop()


def _remember_scope(fn):
    """Function.__call__'s hook: the op keeps the modules running now, outermost first."""
    fn.scope = tuple(module_stack.entries)


def _path(m):
    """The name path of `m` below the outermost module running ("blocks.0.attn"); "" for that one."""
    if not module_stack.modules:
        return ""
    parent_path, parent = module_stack.entries[-1][0], module_stack.modules[-1]
    name = next((n for n, child in parent._modules.items() if child is m), None)  # most calls: a child
    if name is None:  # deeper, as a block inside a ModuleList, or not registered at all
        name = next((path for path, child in parent.named_modules() if child is m), type(m).__name__)
    return f"{parent_path}.{name}" if parent_path else name
