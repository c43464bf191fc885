"""Run-time CPU dispatch: the same numbers from every instruction set's kernels.

The fast tier compiles its C kernels once per instruction-set level (AVX512,
AVX2, DEFAULT: see fast/build.py) and imports the best the CPU runs, or a
lower one asked for with ``GLASSTORCH_CPU_CAPABILITY`` (or PyTorch's
``ATEN_CPU_CAPABILITY``). ``glasstorch.backends.cpu.get_cpu_capability()``
names the choice, with PyTorch's strings.

The level is fixed at import, so each level runs a program in a process of its
own, on the same inputs, and the programs' results are compared: a GEMM (the
packed and the direct path, float32 and float64, batched), a convolution and
a weight gradient, exp and tanh, sums and a mean, and three Adam steps. AVX2
and AVX512 both fuse multiply-adds and each kernel adds in an order that does
not depend on the vector width, so their results must agree bit for bit. DEFAULT (plain x86-64)
has no fused multiply-add, so it rounds ``a * b + c`` twice: its results must
agree within float tolerance.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import glasstorch
from glasstorch import backends

pytestmark = pytest.mark.contract

CAPABILITIES = ("DEFAULT", "AVX2", "AVX512")
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = r"""
import sys
import numpy as np
import glasstorch as torch
import glasstorch.nn.functional as F

rng = np.random.default_rng(7)
def t(*shape, dtype=np.float32, scale=1.0):
    return torch.tensor((rng.standard_normal(shape) * scale).astype(dtype))

out = {"capability": np.array(torch.backends.cpu.get_cpu_capability())}
if torch.tier == "fast":
    from glasstorch.fast import build_info
    out["compiled"] = np.array(build_info()["capability"])
    out["gemm_f32"] = (t(128, 96) @ t(96, 80)).numpy()
    out["gemm_f32_direct"] = (t(9, 7) @ t(7, 5)).numpy()
    # over 2^24 multiply-adds with a row-major A: A read in place, B packed
    out["gemm_f32_large"] = (t(1030, 130) @ t(131, 130).t()).numpy()
    out["gemm_f64"] = (t(70, 50, dtype=np.float64) @ t(50, 60, dtype=np.float64)).numpy()
    out["bmm_f32"] = torch.bmm(t(4, 33, 40), t(4, 40, 17)).numpy()
    out["conv2d_f32"] = F.conv2d(t(2, 3, 16, 16), t(8, 3, 3, 3), t(8), padding=1).numpy()
    out["exp_f32"] = t(4099, scale=20.0).exp().numpy()
    out["exp_f64"] = t(1027, dtype=np.float64, scale=20.0).exp().numpy()
    out["tanh_f32"] = t(1031, scale=3.0).tanh().numpy()
    out["layer_norm_f32"] = F.layer_norm(t(37, 130, scale=50.0), (130,), t(130), t(130)).numpy()
    q, k, v = t(2, 3, 37, 8), t(2, 3, 37, 8), t(2, 3, 37, 8)
    out["causal_attention_f32"] = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    out["sum_f32"] = t(100003).sum().numpy()
    out["sum_dim_f32"] = t(37, 301).sum(dim=1).numpy()
    out["mean_f64"] = t(50, 77, dtype=np.float64).mean(dim=0).numpy()
    p = torch.nn.Parameter(t(1000))
    opt = torch.optim.Adam([p], lr=1e-2)
    for _ in range(3):
        p.grad = t(1000)
        opt.step()
    out["adam_f32"] = p.detach().numpy()
    # a weight gradient on the transposed product (16 channels, 32-wide rows)
    w = torch.tensor(rng.standard_normal((16, 16, 3, 3)).astype(np.float32), requires_grad=True)
    (F.conv2d(t(2, 16, 32, 32), w, padding=1) * t(2, 16, 32, 32)).sum().backward()
    out["conv2d_weight_grad_f32"] = w.grad.numpy()
np.savez(sys.argv[1], **out)
"""


def _fast_tier_built() -> bool:
    try:
        from glasstorch.fast import supported_capability

        supported_capability()
    except ImportError:
        return False
    return True


needs_fast = pytest.mark.skipif(not _fast_tier_built(), reason="the fast tier is not built")


def _run(tmp_path, tier: str, **variables: str) -> tuple[dict, str]:
    """Run PROGRAM in a fresh interpreter; its arrays by name, and its stderr."""
    env = {k: v for k, v in os.environ.items() if k not in variables}
    for name in ("GLASSTORCH_CPU_CAPABILITY", "ATEN_CPU_CAPABILITY"):
        env.pop(name, None)
    env.update(variables, GLASSTORCH_TIER=tier)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_REPO, env.get("PYTHONPATH")]))
    path = tmp_path / f"{tier}-{'-'.join(variables.values()) or 'best'}.npz"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    with np.load(path) as arrays:
        return {name: arrays[name] for name in arrays.files}, done.stderr


def _runnable() -> list[str]:
    """The levels this CPU can run, lowest first."""
    from glasstorch.fast import supported_capability

    return list(CAPABILITIES[: CAPABILITIES.index(supported_capability()) + 1])


def test_get_cpu_capability_names_a_level():
    assert backends.cpu.get_cpu_capability() in CAPABILITIES


@needs_fast
@pytest.mark.skipif(glasstorch.tier != "fast", reason="the loaded kernels are the fast tier's")
def test_loaded_kernels_are_the_ones_reported():
    from glasstorch.fast import build_info, supported_capability

    info = build_info()
    assert info["capability"] == backends.cpu.get_cpu_capability()
    assert info["cpu_supports"] == supported_capability()
    assert CAPABILITIES.index(info["capability"]) <= CAPABILITIES.index(info["cpu_supports"])


@needs_fast
def test_kernels_call_the_loaded_modules_c_functions():
    # _glue copies the loaded module's functions and constants into a Python
    # module (its lookups are cached); they must be the very same objects.
    from glasstorch.fast import _glue, load_native

    native = load_native()
    names = dir(native.lib)
    assert names and all(getattr(_glue.lib, name) is getattr(native.lib, name) for name in names)
    assert _glue.lib.GT_FLOAT32 == native.lib.GT_FLOAT32
    # Only constants are copied by value; a C variable would be refused at import.
    assert not _glue._has_address(native.lib, "GT_FLOAT32")
    assert _glue._has_address(native.lib, "gt_binary")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Each runnable level's results (fast tier), by level."""
    if not _fast_tier_built():
        pytest.skip("the fast tier is not built")
    tmp_path = tmp_path_factory.mktemp("cpu-capability")
    return {
        level: _run(tmp_path, "fast", GLASSTORCH_CPU_CAPABILITY=level.lower())[0]
        for level in _runnable()
    }


@pytest.mark.skipif(glasstorch.tier != "fast", reason="runs the fast tier's kernels")
def test_each_level_is_used_when_asked_for(results):
    for level, arrays in results.items():
        assert str(arrays["capability"]) == level
        assert str(arrays["compiled"]) == level  # the module really was built for it


@pytest.mark.skipif(glasstorch.tier != "fast", reason="runs the fast tier's kernels")
def test_avx2_and_avx512_agree_bit_for_bit(results):
    if "AVX512" not in results:
        pytest.skip("this CPU has no AVX-512")
    avx2, avx512 = results["AVX2"], results["AVX512"]
    for name in avx512:
        if name not in ("capability", "compiled"):
            np.testing.assert_array_equal(avx2[name], avx512[name], err_msg=name)


@pytest.mark.skipif(glasstorch.tier != "fast", reason="runs the fast tier's kernels")
def test_default_agrees_with_the_vector_levels(results):
    best = max(results, key=CAPABILITIES.index)
    if best == "DEFAULT":
        pytest.skip("this CPU runs only the DEFAULT kernels")
    plain, vector = results["DEFAULT"], results[best]
    for name in vector:
        if name in ("capability", "compiled"):
            continue
        expected = vector[name]
        # float32 rounding, plus the unfused multiply-adds of a K-long dot
        # product (GEMM, convolution), whose error grows with the largest term.
        rtol = 1e-12 if expected.dtype == np.float64 else 2e-6
        atol = rtol * 100 * float(np.abs(expected).max())
        np.testing.assert_allclose(plain[name], expected, rtol=rtol, atol=atol, err_msg=name)


@needs_fast
def test_invalid_value_is_ignored_with_a_warning(tmp_path):
    from glasstorch.fast import supported_capability

    arrays, stderr = _run(tmp_path, glasstorch.tier, GLASSTORCH_CPU_CAPABILITY="avx9000")
    assert "ignoring invalid value for GLASSTORCH_CPU_CAPABILITY: 'avx9000'" in stderr
    assert str(arrays["capability"]) == supported_capability()


@needs_fast
def test_pytorch_variable_is_honoured_and_glasstorch_variable_wins(tmp_path):
    arrays, _ = _run(tmp_path, glasstorch.tier, ATEN_CPU_CAPABILITY="default")
    assert str(arrays["capability"]) == "DEFAULT"
    lowest_vector = "AVX2" if "AVX2" in _runnable() else "DEFAULT"
    arrays, _ = _run(
        tmp_path,
        glasstorch.tier,
        ATEN_CPU_CAPABILITY="default",
        GLASSTORCH_CPU_CAPABILITY=lowest_vector.lower(),
    )
    assert str(arrays["capability"]) == lowest_vector


@needs_fast
def test_more_than_the_cpu_has_falls_back_with_a_warning(monkeypatch):
    # Pretend the CPU stops at AVX2; the choice is made afresh (and put back after).
    import glasstorch.fast as fast

    monkeypatch.setattr(fast, "supported_capability", lambda: "AVX2")
    monkeypatch.setattr(fast, "_chosen", None)
    monkeypatch.setenv("GLASSTORCH_CPU_CAPABILITY", "avx512")
    with pytest.warns(UserWarning, match="supports at most AVX2; using the AVX2 kernels"):
        assert fast.cpu_capability() == "AVX2"


@pytest.mark.parametrize(
    ("preset", "seen"),
    (({}, "20000"), ({"GOMP_SPINCOUNT": "5"}, "5"), ({"OMP_WAIT_POLICY": "active"}, None)),
    ids=("default", "user-spin-count", "user-wait-policy"),
)
def test_kernel_module_loads_with_a_short_openmp_spin(monkeypatch, preset, seen):
    """GNU OpenMP reads GOMP_SPINCOUNT as the module loads: set to fast.SPIN_COUNT
    for that moment only, unless the user chose a spin count or wait policy."""
    import glasstorch.fast as fast

    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in preset.items():
        monkeypatch.setenv(name, value)
    during = {}
    monkeypatch.setattr(
        fast.importlib,
        "import_module",
        lambda name: during.setdefault(name, os.environ.get("GOMP_SPINCOUNT")),
    )
    fast._import_with_short_spin("some_module")
    assert during == {"some_module": seen}
    assert os.environ.get("GOMP_SPINCOUNT") == preset.get("GOMP_SPINCOUNT")
