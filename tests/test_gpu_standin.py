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
    cp.cupyx.scatter_add(target, cp.asarray(np.array([0, 3, 4])), 1.0)
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
    x[...] = np.ones(4)  # a host-to-device copy, not a transfer back
    assert isinstance(y, cp.ndarray) and sum(cp.transfers.values()) == 0
    assert cp.uploads["setitem"] == 1


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
