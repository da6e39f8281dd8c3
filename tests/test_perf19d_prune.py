"""Issue 19: jit's StableHLO bodies are pruned as they are written (backends/emitter.py prune):
an op that repeats an earlier one on the same operands is replaced by it (loops included, their
inner names aside), an op nobody reads is dropped, and ops with effects (host callbacks,
random draws, collectives, barriers) stay. The pruned program computes what the unpruned one
does: derivatives of nested loops to the 2nd order, jit against the unpruned trace and eager."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import secant
import secant.numpy as snp
from secant import grad, jit
from secant.backends import emitter
from secant.backends.emitter import prune

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from loop_programs import for_in_while, nested_for  # noqa: E402

pytestmark = pytest.mark.usefixtures("fast_compiles")


def heat_mean(a):
    u = snp.exp(-snp.linspace(-2.0, 2.0, 8) ** 2)
    for _ in range(5):
        u = u + a * (snp.roll(u, 1) + snp.roll(u, -1) - 2 * u)
    return snp.sum(u ** 3)


def _lowered(f, x, pruned):
    old = emitter.PRUNE
    emitter.PRUNE = pruned
    try:
        lo = jit(f).lower(x)
        return lo.as_text(), float(lo.compile()(x))
    finally:
        emitter.PRUNE = old


@pytest.mark.parametrize("f,x,order", [(nested_for, 0.7, 2), (heat_mean, 0.2, 2),
                                       (for_in_while, 0.7, 2)],
                         ids=["nested_for", "heat_mean", "for_in_while"])
def test_pruned_derivative_equals_unpruned(x64, f, x, order):
    d = f
    for _ in range(order):
        d = grad(d)
    full, want = _lowered(d, x, False)
    small, got = _lowered(d, x, True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, float(d(x)), rtol=1e-10, atol=1e-12)      # eager
    assert len(small) < 0.8 * len(full)
    assert small.count("stablehlo.while") <= full.count("stablehlo.while")


def _names(lines):
    return [re.match(r"\s*(%\w+)", ln).group(1) for ln in lines if re.match(r"\s*%\w+", ln)]


def test_dead_ops_dropped_and_repeats_merged():
    lines = ["    %1 = stablehlo.constant dense<1.0> : tensor<f32> loc(\"a.py\":1:1)",
             "    %2 = stablehlo.constant dense<1.0> : tensor<f32> loc(\"a.py\":2:1)",
             "    %3 = stablehlo.add %1, %2 : tensor<f32>",
             "    %4 = stablehlo.sine %3 : tensor<f32>",                    # dead
             "    %5 = stablehlo.add %2, %2 : tensor<f32>",                 # = %3 once %2 -> %1
             "    %6 = stablehlo.multiply %3, %5 : tensor<f32>",
             "    return %6 : tensor<f32>"]
    out = prune(lines)
    assert _names(out) == ["%1", "%3", "%6"]
    assert out[-2].strip() == "%6 = stablehlo.multiply %3, %3 : tensor<f32>"
    assert out[-1].strip() == "return %6 : tensor<f32>"


def test_repeated_loops_merge_and_results_renamed():
    def loop(r, a, b):
        return (f'    %{r}:2 = "stablehlo.while"(%0, %1) ({{\n'
                f"      ^bb0(%{a}: tensor<i32>, %{b}: tensor<f32>):\n"
                f"        %{a}0 = stablehlo.sine %{b} : tensor<f32>\n"
                f"        stablehlo.return %{a}, %{a}0 : tensor<i32>, tensor<f32>\n"
                f"    }}) : (tensor<i32>, tensor<f32>) -> (tensor<i32>, tensor<f32>)")
    lines = [loop(5, 6, 7), loop(8, 9, 10),
             "    %11 = stablehlo.add %5#1, %8#1 : tensor<f32>", "    return %11 : tensor<f32>"]
    out = prune(lines)
    assert len(out) == 3 and out[0] == lines[0]
    assert out[1].strip() == "%11 = stablehlo.add %5#1, %5#1 : tensor<f32>"


def test_effects_kept_and_never_merged():
    call = ('    %1 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%0) {has_side_effect = '
            'true} : (tensor<f32>) -> tensor<f32>')
    rng = "    %3 = stablehlo.rng %0, %0, %2, distribution = UNIFORM : tensor<f32>"
    lines = [call, call.replace("%1", "%4"), rng, rng.replace("%3", "%5"),
             "    %6 = stablehlo.add %3, %5 : tensor<f32>", "    return %6 : tensor<f32>"]
    out = prune(lines)
    assert out == lines


def test_unused_callback_still_runs():
    seen = []

    def f(x):
        secant.debug.callback(lambda v: seen.append(float(v)), x * 2.0)
        return x + 1.0

    assert float(jit(f)(1.5)) == 2.5
    assert seen == [3.0]
