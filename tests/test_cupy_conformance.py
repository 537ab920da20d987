"""The CuPy stand-in offers nothing the real CuPy lacks: every name, keyword and dtype rule checked against it.

Real CuPy imports on a machine without a GPU or driver (only making an array fails), so its
functions' signatures, its ndarray methods' docstrings and its ufuncs' type tables can be read
here. The test extra installs `cupy-cuda12x`; these tests run wherever it installs (not on macOS,
for which CuPy publishes no wheel).
"""

import inspect
import re
import sys

import numpy as np
import pytest
from strict_cupy import cupy_standin

if sys.platform == "darwin":
    pytest.skip("CuPy publishes no wheel for macOS", allow_module_level=True)
try:
    import cupy
    import cupyx.scipy.special
except ImportError as err:  # pragma: no cover - the test extra installs it
    raise ImportError(f"real CuPy checks the stand-in: pip install -e '.[test]' ({err})") from None

pytestmark = pytest.mark.skipif(cupy is cupy_standin, reason="the stand-in is installed as cupy in this process")
DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64]


def parameters(signature):
    """[(name, kind, default)] of a signature, without `self` and annotations."""
    return [
        (p.name, p.kind, repr(p.default))
        for p in signature.parameters.values()
        if p.name != "self"  # methods: compared without their instance
    ]


def real_signature(function):
    """inspect.signature of a Python function; for a Cython method, its docstring's first line."""
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        first = function.__doc__.strip().splitlines()[0]  # "_ndarray_base.sum(self, axis=None, ...) -> _ndarray_base"
        inside = re.match(r"[\w.]+\((.*)\)", first)[1]
        inside = re.sub(r"\b(?:_ndarray_base|int|Py_ssize_t)\s+(\w+)", r"\1", inside)  # Cython's typed arguments
        return cupy_standin._signature(inside)


def kinds_free(params):
    return [(name, default) for name, _, default in params]


@pytest.mark.parametrize("name", sorted(cupy_standin._FUNCTIONS))
def test_each_function_exists_in_cupy_with_the_same_parameters(name):
    real = getattr(cupy, name)
    assert kinds_free(parameters(inspect.signature(getattr(cupy_standin, name)))) == kinds_free(
        parameters(real_signature(real))
    )


@pytest.mark.parametrize("name", ["array", "asarray", "ascontiguousarray", "asnumpy", "take", "get_array_module"])
def test_each_hand_written_function_has_cupy_s_parameters(name):
    ours = parameters(inspect.signature(getattr(cupy_standin, name)))
    assert kinds_free(ours) == kinds_free(parameters(real_signature(getattr(cupy, name))))


@pytest.mark.parametrize("name", sorted(cupy_standin._METHODS) + ["take", "get", "set", "item", "tolist"])
def test_each_ndarray_method_exists_in_cupy_with_the_same_parameters(name):
    ours = inspect.signature(getattr(cupy_standin.ndarray, name))
    assert kinds_free(parameters(ours)) == kinds_free(parameters(real_signature(getattr(cupy.ndarray, name))))


def test_the_stand_in_has_no_protocol_cupy_lacks():
    for dunder in ("__index__", "__array_ufunc__"):
        if not hasattr(cupy.ndarray, dunder) or getattr(cupy.ndarray, dunder) is None:
            assert getattr(cupy_standin.ndarray, dunder, None) is None, dunder
    assert not hasattr(cupy.ndarray, "__index__")  # the rule the stand-in keeps: no device int as a list index


def real_ufunc(name):
    return getattr(cupyx.scipy.special, name) if name == "erf" else getattr(cupy, name)


def resolved(types, dtypes):
    """The output dtype CuPy's table gives for array inputs: the first loop every input casts to safely."""
    for loop in types:
        ins, outs = loop.split("->")
        if all(np.can_cast(d, np.dtype(c), "safe") for d, c in zip(dtypes, ins)):
            return np.dtype(outs[0])
    return None


OFFERED_UFUNCS = sorted(cupy_standin._UFUNCS) + ["erf"]


@pytest.mark.parametrize("name", OFFERED_UFUNCS)
def test_each_ufunc_is_a_cupy_ufunc_with_the_same_call_keywords_and_methods(name):
    real, ours = real_ufunc(name), getattr(cupy_standin, name)
    assert type(real).__name__ == "ufunc" and (real.nin, real.nout) == (ours.nin, ours.nout)
    assert type(real) is type(cupy.add)  # one class, one __call__: add's documented keywords are every ufunc's
    real_keywords = set(re.findall(r"(\w+)=", cupy.add.__doc__.strip().splitlines()[0]))  # "add(x1, x2, /, out=None,"
    ours_keywords = {p for p in inspect.signature(ours.__call__).parameters if p not in ("args",)}
    assert ours_keywords <= real_keywords, ours_keywords - real_keywords
    for method in ("reduceat", "at"):
        assert kinds_free(parameters(inspect.signature(getattr(ours, method)))) == kinds_free(
            parameters(real_signature(getattr(real, method)))
        )


@pytest.mark.parametrize("name", OFFERED_UFUNCS)
def test_each_ufunc_gives_cupy_s_result_dtype_for_every_input_dtype(name):
    real, ours = real_ufunc(name), getattr(cupy_standin, name)
    checked = 0
    for first in DTYPES:
        for second in DTYPES if ours.nin == 2 else [None]:
            dtypes = [np.dtype(first)] + ([np.dtype(second)] if second else [])
            expected = resolved(real.types, dtypes)
            inputs = [cupy_standin.asarray(np.ones(2, dtype=d)) for d in dtypes]
            try:
                got = ours(*inputs).dtype
            except TypeError:  # NumPy refuses a few loops CuPy has (bool subtract, negative, sign): stricter is fine
                got = None
            if got is None:
                continue
            assert got == expected, f"{name}{tuple(d.name for d in dtypes)}: stand-in {got}, CuPy {expected}"
            checked += 1
    assert checked >= len(DTYPES) - 3  # the table was really walked


def test_every_module_name_the_stand_in_offers_is_in_cupy():
    offered = set(cupy_standin._FUNCTIONS) | set(cupy_standin._UFUNCS)
    offered |= {"array", "asarray", "ascontiguousarray", "asnumpy", "take", "get_array_module", "ndarray", "ufunc"}
    assert not [name for name in offered if not hasattr(cupy, name)]
    assert hasattr(cupy.random, "Philox4x3210") and hasattr(cupy.random, "XORWOW") and hasattr(cupy.random, "Generator")
    assert hasattr(cupy.cuda.runtime, "getDeviceCount") and hasattr(cupy.cuda, "Device")
    assert hasattr(cupy.linalg, "norm") and hasattr(cupyx.scipy.special, "erf")


def test_the_random_generator_methods_have_cupy_s_parameters():
    for method in ("random", "standard_normal", "uniform", "integers"):
        ours = inspect.signature(getattr(cupy_standin._Generator, method))
        real = real_signature(getattr(cupy.random.Generator, method))
        assert kinds_free(parameters(ours)) == kinds_free(parameters(real)), method
