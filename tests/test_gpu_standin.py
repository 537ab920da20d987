"""The strict CuPy stand-in keeps CuPy's rules (tests/strict_cupy/README.md says where each comes from)."""

import sys
import types

import numpy as np
import pytest
import strict_cupy
from strict_cupy import cupy_standin as cp

from tensorlab import backend as tl_backend


@pytest.fixture(autouse=True)
def fresh_counts():
    cp.reset_counts()
    yield
    cp.reset_counts()


def test_no_implicit_conversion_to_numpy():
    x = cp.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.array([1.0]) + np.asarray(x)


def test_numpy_functions_and_ufuncs_refuse_it():
    x = cp.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.exp(x)
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        np.ones(3) * x  # NumPy defers to x's reflected operator, which refuses the NumPy array
    with pytest.raises(TypeError, match="no implementation found for 'numpy.concatenate'"):
        np.concatenate([x, x])
    with pytest.raises(TypeError, match="no implementation found for 'numpy.triu'"):
        np.triu(x)


def test_cupy_operations_refuse_numpy_arrays_but_take_scalars():
    x = cp.asarray(np.arange(3.0))
    for make in (
        lambda: x * np.ones(3),
        lambda: cp.exp(np.ones(3)),
        lambda: cp.where(x > 1, x, np.zeros(3)),
        lambda: cp.concatenate([x, np.ones(3)]),
    ):
        with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
            make()
    with pytest.raises(TypeError, match="Unsupported type <class 'list'>"):
        cp.exp([1.0, 2.0])  # CuPy's ufuncs take only cupy arrays and scalars
    y = np.float32(2) * x + 1.5  # NumPy and Python scalars are fine
    assert isinstance(y, cp.ndarray) and y.get().tolist() == [1.5, 3.5, 5.5]


def test_reductions_and_scalar_indexing_give_0d_device_arrays():
    x = cp.asarray(np.arange(6.0).reshape(2, 3))
    for value in (x.sum(), x.max(), x[1, 2], cp.sum(x), x.sum(axis=None), next(iter(x[0]))):
        assert isinstance(value, cp.ndarray) and value.shape == ()
    assert type(x).__module__ == "cupy" and tl_backend.is_cupy_array(x)


def test_out_of_range_integer_indices_wrap_as_in_cupy():
    rows = cp.asarray(np.arange(6.0).reshape(3, 2))
    ids = cp.asarray(np.array([0, 5, -4]))
    assert rows[ids].get().tolist() == [[0, 1], [4, 5], [4, 5]]  # 5 % 3 = 2, -4 % 3 = 2
    assert rows[:, cp.asarray(np.array([3]))].get().tolist() == [[1], [3], [5]]  # on axis 1: 3 % 2 = 1
    assert cp.take(rows, cp.asarray(np.array([4])), axis=0).get().tolist() == [[2, 3]]
    assert rows.take(cp.asarray(np.array([7]))).get().tolist() == [1]  # flat: 7 % 6
    target = cp.zeros((3,))
    cp.add.at(target, cp.asarray(np.array([0, 3, 4])), 1.0)
    assert target.get().tolist() == [2, 1, 0]
    rows[cp.asarray(np.array([5]))] = 9.0
    assert rows.get()[2].tolist() == [9, 9]
    with pytest.raises(IndexError):
        rows[3]  # a plain int index still raises, as in CuPy


def test_device_to_host_transfers_are_counted():
    x = cp.asarray(np.arange(4.0))
    x.get(), cp.asnumpy(x), float(x[0]), int(x[1]), bool(x[2]), x.sum().item(), x.tolist(), repr(x)
    assert dict(cp.transfers) == {"get": 2, "float": 1, "int": 1, "bool": 1, "item": 1, "tolist": 1, "repr": 1}
    cp.reset_counts()
    y = (x * 2 + cp.exp(x)).sum(axis=0) / x.max()  # stays on the device
    x.set(np.ones(4))  # a host-to-device copy, not a transfer back
    assert isinstance(y, cp.ndarray) and sum(cp.transfers.values()) == 0
    assert cp.uploads["set"] == 1


def test_boolean_masks_and_nonzero_count_as_waits_for_the_device():
    x = cp.asarray(np.arange(4.0))
    x[x > 1] = 0.0  # the mask's count of True decides what is written: the host reads it
    picked = x[x < 1]
    cp.nonzero(x), x.nonzero(), cp.argwhere(x), cp.flatnonzero(x), cp.where(x > 0)
    assert dict(cp.transfers) == {"mask": 2, "nonzero": 5} and picked.shape == (3,)
    cp.reset_counts()
    cp.where(x > 0, x, 0.0), x + (x == 0)  # the same jobs with fixed shapes: no wait
    assert sum(cp.transfers.values()) == 0


def test_setitem_takes_device_arrays_and_scalars_only():
    x = cp.zeros((2, 2))
    with pytest.raises(ValueError, match="truth value of an array with more than one element is ambiguous"):
        x[...] = np.ones((2, 2))  # CuPy hands a non-cupy value to fill(), which asks for its truth value
    with pytest.raises(TypeError, match="Unsupported type <class 'list'>"):
        x[0] = [1.0, 2.0]
    x[...] = cp.asarray(np.ones((2, 2)))
    x[0, 0] = 5.0
    assert x.get().tolist() == [[5, 1], [1, 1]]


def test_no_index_protocol_and_no_keyword_cupy_lacks():
    x = cp.asarray(np.array([1, 2]))
    with pytest.raises(TypeError):
        [0, 1, 2][x[0]]  # cupy.ndarray has no __index__: a device int is no list index
    with pytest.raises(TypeError, match=r"max\(\) got an unexpected keyword argument 'initial'"):
        cp.max(x, initial=0)  # NumPy takes initial=, CuPy's max does not
    with pytest.raises(TypeError, match=r"ndarray.sum\(\) got an unexpected keyword argument 'where'"):
        x.sum(where=x > 1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'where'"):
        cp.add(x, x, where=x > 1)  # CuPy's ufuncs take out, casting and dtype only


def test_erf_follows_cupy_s_type_table():
    half = cp.asarray(np.array([0.5], dtype=np.float16))
    assert cp.erf(half).dtype == np.float64  # 'e->d': CuPy computes float16 in float64
    assert cp.erf(cp.asarray(np.array([0.5], dtype=np.float32))).dtype == np.float32
    assert abs(float(cp.erf(half)[0]) - 0.5204998778130465) < 1e-15


def test_reduceat_sums_runs_as_numpy_does():
    rows = cp.asarray(np.arange(12.0).reshape(6, 2))
    starts = cp.asarray(np.array([0, 2, 5]))
    assert cp.add.reduceat(rows, starts, axis=0).get().tolist() == [[2, 4], [18, 21], [10, 11]]


def test_random_atomic_order_changes_the_bits_of_a_repeated_add(monkeypatch):
    values = np.random.default_rng(0).standard_normal(2000).astype(np.float32) * np.float32(1e4) ** np.arange(
        -1, 2, dtype=np.float32
    ).repeat([700, 600, 700])

    def atomic_sum():
        target = cp.zeros((1,), dtype=np.float32)
        cp.add.at(target, cp.asarray(np.zeros(values.size, dtype=np.int64)), cp.asarray(values))
        return target.get()[0]

    assert len({atomic_sum() for _ in range(5)}) == 1  # in order, as NumPy adds
    monkeypatch.setattr(cp, "atomic_order", "random")
    assert len({atomic_sum() for _ in range(5)}) > 1  # as atomicAdd may: the rounding depends on the order


@pytest.mark.parametrize(
    ("library", "make", "error"),
    [
        ("nvrtc", lambda x: cp.exp(x), "CuPy failed to load libnvrtc.so.12"),
        ("cublas", lambda x: x @ x, "libcublas.so.12: cannot open shared object file"),
        ("curand", lambda x: cp.random.default_rng(0).random(2), "libcurand.so.10: cannot open shared object file"),
    ],
)
def test_a_missing_cuda_library_fails_as_in_cupy(monkeypatch, library, make, error):
    x = cp.asarray(np.ones((2, 2)))
    monkeypatch.setattr(cp, "missing_library", library)
    with pytest.raises((RuntimeError, ImportError), match=error):
        make(x)


def test_random_generator_has_cupy_s_api():
    rng = cp.random.default_rng(0)
    assert rng.random((2, 3), dtype=np.float32).dtype == np.float32
    assert isinstance(rng.standard_normal(), cp.ndarray) and rng.standard_normal().shape == ()
    ints = rng.integers(0, 5, size=100)
    assert ints.dtype == np.int64 and 0 <= int(ints.min()) and int(ints.max()) < 5


def test_a_generator_takes_a_bit_generator_seeded_through_a_seed_sequence():
    def draw(seed):
        return cp.random.Generator(cp.random.Philox4x3210(seed)).random(8, dtype=np.float32).get()

    assert np.array_equal(draw([3, 1]), draw(np.random.SeedSequence([3, 1])))  # a list goes through SeedSequence
    assert not np.array_equal(draw([3, 1]), draw([3, 2]))
    with pytest.raises(TypeError, match="takes a BitGenerator"):
        cp.random.Generator(0)


@pytest.mark.skipif(strict_cupy.real_gpu_present(), reason="a real GPU is present: the stand-in never replaces it")
def test_active_installs_it_for_one_block_and_puts_everything_back():
    before = sys.modules.get("cupy"), tl_backend._cupy
    with strict_cupy.active() as cupy:
        assert tl_backend.gpu_available() and tl_backend.module_for("cuda") is cupy
        import cupyx.scipy.special

        assert cupyx.scipy.special.erf is cp.erf
    assert (sys.modules.get("cupy"), tl_backend._cupy) == before


def test_a_real_gpu_is_never_hidden(monkeypatch):
    real = types.ModuleType("cupy")  # a CuPy that sees one device
    real.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1))
    monkeypatch.setitem(sys.modules, "cupy", real)
    assert strict_cupy.real_gpu_present()
    assert strict_cupy.install() is False and sys.modules["cupy"] is real
    with pytest.raises(RuntimeError, match="a real GPU is present"):
        with strict_cupy.active():
            pass


def test_without_a_device_the_stand_in_is_used(monkeypatch):
    real = types.ModuleType("cupy")  # CuPy installed, no driver
    real.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 0))
    monkeypatch.setitem(sys.modules, "cupy", real)
    assert not strict_cupy.real_gpu_present()
