"""The FIRST call of a transformed function reading a property of an object its code builds
(`p = mk(a); p.norm2`, mk making a plain class's object): the transform meets the class only
when the code runs, so it must find it at transform time among the classes the function
reaches (transformer/properties.py Reach), or generate again before the call when it is
defined later. Each case builds fresh modules (a fresh class no transform or registry has
seen), so every call checked here is a first call; values against float64 central differences
of the user's function run eagerly, vmap against a loop, jit against eager."""
import importlib
import itertools
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import secant

from user_programs.checks import rotated

SHAPES = '''
import secant.numpy as snp


class Pair:
    def __init__(self, u, v):
        self.u, self.v = u, v

    @property
    def norm2(self):
        return self.u * self.u + self.v * self.v

    @property
    def norm(self):                 # (a property that reads another one)
        return snp.sqrt(self.norm2)

    @property
    def total(self):                # (run on a batched object: the batch summed too)
        return snp.sum(snp.stack([self.u, self.v]) ** 2)


def mk(a, b):
    return Pair(a, b)
'''

BODY = '''
def f(a):
    p = mk(snp.sin(a), a * a)
    return p.{attr}
'''

TRANSFORMS = {"grad": "secant.grad(f)", "grad_grad": "secant.grad(secant.grad(f))",
              "jacfwd": "secant.jacfwd(f)", "vmap": "secant.vmap(f)", "jit": "secant.jit(f)",
              "jit_grad": "secant.jit(secant.grad(f))",
              "vmap_grad": "secant.vmap(secant.grad(f))",
              "jit_vmap": "secant.jit(secant.vmap(f))"}

_count = itertools.count()


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """make(source, ...) -> the module of the last source, each written to a fresh file."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made = []

    def make(*sources):
        names = [f"stale15_m{next(_count)}" for _ in sources]
        for name, source in zip(names, sources):
            text = textwrap.dedent(source).replace("SHAPES", names[0])
            (tmp_path / f"{name}.py").write_text(text)
        importlib.invalidate_caches()
        made.extend(names)
        return importlib.import_module(names[-1])

    yield make
    for name in made:
        sys.modules.pop(name, None)


def _fresh(text, k):
    """text, its property names made unique (a name some class registered before computes is
    read by its getter anyway: every case reads names no class has had)."""
    return text.replace("norm", f"norm{k}_").replace("total", f"total{k}_")


def _scenario(modules, where, attr, transform):
    """The module holding f and T, T the transform of f, made as `where` says."""
    k = next(_count)
    body, shapes = _fresh(BODY.format(attr=attr), k), _fresh(SHAPES, k)
    make_t = f"\nT = {TRANSFORMS[transform]}\n"
    if where == "same_module":
        return modules("import secant\n" + shapes + body + make_t)
    if where == "other_module_class":           # Pair imported, mk defined here
        return modules(shapes, "import secant\nimport secant.numpy as snp\nfrom SHAPES import "
                       "Pair\n\n\ndef mk(a, b):\n    return Pair(a, b)\n" + body + make_t)
    if where == "other_module_helper":          # Pair reached only through mk's globals
        return modules(shapes, "import secant\nimport secant.numpy as snp\nfrom SHAPES import "
                       "mk\n" + body + make_t)
    if where == "module_attribute":             # sh.mk: through a user module
        return modules(shapes, "import secant\nimport secant.numpy as snp\nimport SHAPES as sh"
                       "\n" + body.replace("mk(", "sh.mk(") + make_t)
    if where == "defined_after":                # T made before Pair exists (a decorator)
        head, cls = shapes.split("class Pair:")
        return modules("import secant\n" + head + "\ndef mk(a, b):\n    return Pair(a, b)\n"
                       + body + make_t + "\n\nclass Pair:" + cls.split("\ndef mk")[0])
    if where == "closure":                      # everything local to a function
        local = textwrap.indent(shapes.replace("import secant.numpy as snp", "")
                                + body + make_t, "    ")
        return modules("import secant\nimport secant.numpy as snp\n\n\ndef build():\n" + local
                       + "    return f, T\n\n\nf, T = build()\n")
    assert where == "closure_defined_after"
    head, cls = shapes.split("class Pair:")
    local = textwrap.indent("def mk(a, b):\n    return Pair(a, b)\n" + body + make_t
                            + "\n\nclass Pair:" + cls.split("\ndef mk")[0], "    ")
    return modules("import secant\nimport secant.numpy as snp\n\n\ndef build():\n" + local
                   + "    return f, T\n\n\nf, T = build()\n")


WHERE = ["same_module", "other_module_class", "other_module_helper", "module_attribute",
         "defined_after", "closure", "closure_defined_after"]


def _fd(f, a, h=1e-5):
    return (float(f(a + h)) - float(f(a - h))) / (2 * h)


# each (where, attr) scenario under three of the transforms in turn, each transform on eight
# or nine of the 21 (every triple under HYPOTHESIS_PROFILE=thorough)
@pytest.mark.parametrize("where, attr, transform", [
    pytest.param(where, attr, transform, id=f"{where}-{attr}-{transform}")
    for (where, attr), transform in rotated(
        [(where, attr) for where in WHERE for attr in ["norm2", "norm", "total"]],
        TRANSFORMS, 3)])
def test_first_call(modules, x64, where, attr, transform):
    mod = _scenario(modules, where, attr, transform)
    a, xs = 0.7, np.array([0.3, 0.7, -1.1])
    if transform in ("vmap", "vmap_grad", "jit_vmap"):
        got = np.asarray(mod.T(xs))         # (the first call, before any reference)
    else:
        got = np.asarray(mod.T(a))
    f = mod.f
    if transform == "grad_grad":
        want = (float(f(a + 1e-4)) - 2 * float(f(a)) + float(f(a - 1e-4))) / 1e-8
        np.testing.assert_allclose(got, want, rtol=1e-5)
    elif transform in ("grad", "jacfwd", "jit_grad"):
        np.testing.assert_allclose(got, _fd(f, a), rtol=1e-7)
    elif transform == "jit":
        np.testing.assert_allclose(got, float(f(a)), rtol=1e-12)
    elif transform in ("vmap", "jit_vmap"):
        np.testing.assert_allclose(got, [float(f(x)) for x in xs], rtol=1e-12)
    else:
        np.testing.assert_allclose(got, [_fd(f, x) for x in xs], rtol=1e-7)


def test_jvp_first_call(modules, x64):
    """jvp called directly (no transform object made before): its tangent on the first call."""
    mod = _scenario(modules, "other_module_helper", "norm", "jit")
    value, tangent = secant.jvp(mod.f, (0.7,), (2.0,))
    np.testing.assert_allclose(float(value), float(mod.f(0.7)), rtol=1e-12)
    np.testing.assert_allclose(float(tangent), 2.0 * _fd(mod.f, 0.7), rtol=1e-7)


def test_property_of_a_sum(modules, x64):
    """(Pair(..) + Pair(..)).norm2 with the class's own __add__, its first call."""
    mod = modules(_fresh("import secant\n" + SHAPES.replace("def mk", '''
def _add(self, other):
    return Pair(self.u + other.u, self.v + other.v)


Pair.__add__ = _add


def mk''') + '''

def f(x):
    return (Pair(x[0], x[1]) + Pair(x[2], x[3])).norm
''', next(_count)))
    x = np.array([0.5, -1.0, 2.0, 0.25])
    got = np.asarray(secant.grad(mod.f)(x))
    want = [_fd(lambda t: mod.f(x + t * e), 0.0) for e in np.eye(4)]
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_unreached_class_is_refused_not_wrong(modules, x64):
    """A class the function cannot reach (its factory in a dict filled after the transform):
    the first call's guess reads the property as a field; its derivative is refused, never a
    wrong value."""
    k = next(_count)
    shapes = modules(_fresh(SHAPES, k))
    mod = modules(_fresh('''
import secant
import secant.numpy as snp

FACTORIES = {}


def f(a):
    p = FACTORIES["pair"](snp.sin(a), a * a)
    return p.norm2
''', k))
    g = secant.grad(mod.f)
    mod.FACTORIES["pair"] = shapes.mk
    try:
        got = float(g(0.7))
    except secant.SecantError as e:
        assert f"Pair.norm{k}_2, a property" in str(e)
    else:
        np.testing.assert_allclose(got, _fd(mod.f, 0.7), rtol=1e-7)


def test_lead_repro_in_a_fresh_process(tmp_path):
    """The report's program, run in a fresh process (float32): its first call is right."""
    script = tmp_path / "repro.py"
    script.write_text("import secant\n" + SHAPES + textwrap.dedent('''

        def g1(a, b):
            p = mk(a, 1.0)
            return p.norm2


        print(float(secant.grad(g1)(0.5, 2.0)), float(secant.grad(g1)(0.5, 2.0)))
    '''))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert [float(v) for v in out.stdout.split()] == [1.0, 1.0]


# --- the callee guard (transformer/parse.py Guard): a callee rebound while the first call ran --
REBINDS = '''
import secant
import secant.numpy as snp

act = snp.sin


def setup(x):                       # (rebinds the callee f then reads; its result is used)
    global act
    act = snp.tanh
    return x * 1.0


def f(a):
    y = setup(a)
    return act(y) * a
'''


@pytest.mark.parametrize("transform", ["grad", "grad_grad", "jacfwd", "jvp", "vmap", "jit",
                                       "jit_grad", "vmap_grad", "jit_vmap"])
def test_callee_rebound_while_the_first_call_runs(modules, x64, transform):
    """Python calls the function the global names when the line runs (tanh): the code
    generated when sin was bound is run again by the code generated for tanh."""
    mod = modules(REBINDS)
    a, xs = 0.7, np.array([0.3, 0.7, -1.1])
    if transform == "jvp":
        value, got = secant.jvp(mod.f, (a,), (1.0,))
    elif transform in ("vmap", "vmap_grad", "jit_vmap"):
        got = np.asarray(eval(TRANSFORMS[transform], {"secant": secant, "f": mod.f})(xs))
    else:
        got = np.asarray(eval(TRANSFORMS[transform], {"secant": secant, "f": mod.f})(a))

    def ref(x):                                 # (what Python computes, in float64)
        return np.tanh(x) * x
    if transform == "grad_grad":
        want = (ref(a + 1e-4) - 2 * ref(a) + ref(a - 1e-4)) / 1e-8
        np.testing.assert_allclose(got, want, rtol=1e-5)
    elif transform == "jit":
        np.testing.assert_allclose(got, ref(a), rtol=1e-12)
    elif transform in ("vmap", "jit_vmap"):
        np.testing.assert_allclose(got, [ref(x) for x in xs], rtol=1e-12)
    elif transform == "vmap_grad":
        np.testing.assert_allclose(got, [_fd(ref, x) for x in xs], rtol=1e-7)
    else:
        np.testing.assert_allclose(got, _fd(ref, a), rtol=1e-7)
    np.testing.assert_allclose(float(mod.f(a)), ref(a), rtol=1e-12)    # (Python agrees)


def test_callee_rebound_at_each_call_is_read_at_run_time(modules, x64):
    """A function that rebinds its callee each time it runs (`global act` in the module): the
    name is read when the line runs (transformer/global_writes.py rebound_callee), as Python
    does, so each call differentiates the callee bound then (was refused: no one derivative
    code); its Python effect (the toggle) once per call."""
    mod = modules('''
import secant.numpy as snp

act = snp.sin


def toggle(x):
    global act
    act = snp.tanh if act is snp.sin else snp.sin
    return x * 1.0


def f(a):
    y = toggle(a)
    return act(y)
''')
    g, a = secant.grad(mod.f), 0.7
    for _ in range(4):
        before = mod.act
        got = float(g(a))
        assert mod.act is not before            # (toggled once by the call)
        want = 1 - np.tanh(a) ** 2 if mod.act is secant.numpy.tanh else np.cos(a)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    xs = np.array([0.3, -1.1])
    for _ in range(2):
        got = np.asarray(secant.vmap(mod.f)(xs))
        want = np.tanh(xs) if mod.act is secant.numpy.tanh else np.sin(xs)
        np.testing.assert_allclose(got, want, rtol=1e-12)
