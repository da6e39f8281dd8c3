"""Small functions written as users write them, and the transforms composed over them, for
tests/test_composition_sweep.py (run this file as a script for the whole sweep's table).

Every function is f(x, w): x a float64 vector (what the transforms differentiate and batch),
w its parameters (an array, a list or a dict). A transform maps (f, x, w) to (g, x', w'); a
composition applies several, innermost first. Each check is one layer deep: the outermost
secant transform of the secant function below it is compared with a numerical reference of
that same inner function (central finite differences for grad/jvp/jacobians, a Python loop for
vmap, eager for jit), so no reference ever nests more than one derivative (hessian: two)."""
import numpy as np

import secant
import secant.numpy as snp
from secant import lax

# --- the functions ------------------------------------------------------------------------------


def chain(x, w):
    return snp.sin(x) * snp.exp(0.3 * x) + x ** 2 * w[0]


def log_tanh(x, w):
    y = snp.log(1.0 + x ** 2)
    return y / (2.0 + snp.tanh(x * w))


def dot_matrix(x, w):
    return snp.dot(w, x)


def matmul_tanh(x, w):
    return snp.tanh(x @ w.T)


def sum_axis(x, w):
    return snp.sum(snp.sin(snp.outer(x, w)), axis=1)


def mean_max(x, w):
    return snp.mean(snp.outer(x, w) ** 2, axis=0) * snp.max(x)


def slices(x, w):
    return x[1:] * x[:-1] + x[0] * w[2]


def where(x, w):
    return snp.where(x > 0, x ** 2, snp.sin(x)) * w


def static_if(x, w):
    if x.shape[-1] > 2:
        y = x * w
    else:
        y = -x
    return snp.cos(y)


def python_loop(x, w):
    y = x
    for i in range(3):
        y = snp.sin(y) * w + x
    return y


def scan(x, w):
    def step(c, xi):
        c = 0.5 * c + snp.sin(xi)
        return c, c * xi
    _, ys = lax.scan(step, 0.0, x * w)
    return ys


def fori(x, w):
    return lax.fori_loop(0, 3, lambda i, y: snp.sin(y) * w + x, x)


def cond(x, w):
    return lax.cond(snp.sum(w) > 0, lambda y: snp.sin(y), lambda y: snp.cos(y), x * w)


def helper(a, b):
    return snp.tanh(a) * b


def helper_call(x, w):
    return helper(x, w) + helper(x ** 2, 0.5)


def list_params(x, ws):
    y = x
    for p in ws:
        y = snp.tanh(y * p)
    return y


def dict_params(x, params):
    return snp.tanh(snp.dot(params["W"], x) + params["b"])


def softmax(x, w):
    z = x * w
    e = snp.exp(z - snp.max(z))
    return e / snp.sum(e)


def logsumexp(x, w):
    m = snp.max(x)
    return snp.log(snp.sum(snp.exp(x - m))) + m


def concatenate(x, w):
    return snp.concatenate([x, x * w, snp.sin(x[:1])])


def stack(x, w):
    return snp.stack([x, snp.cos(x) * w])


def reshape_transpose(x, w):
    return (snp.outer(x, w).T * 2.0).reshape(9)


def at_set(x, w):
    y = x.at[1].set(x[0] * w[1])
    return y.at[0].add(snp.sin(x[2]))


def list_append(x, w):
    out = []
    for i in range(3):
        out.append(x[i] * w[i])
    return snp.stack(out)


def conditional_expression(x, w):
    y = x * w if x.shape[-1] == 3 else x
    return snp.exp(-y ** 2)


def mlp(x, params):
    h = snp.tanh(params["W"] @ x + params["b"])
    return snp.dot(h, h)


W3 = np.array([0.8, -0.6, 1.3])
W23 = np.array([[0.5, -0.3, 0.9], [0.2, 0.7, -0.4]])
DICT = {"W": W23, "b": np.array([0.1, -0.2])}

FUNCTIONS = {
    "chain": (chain, W3), "log_tanh": (log_tanh, W3), "dot_matrix": (dot_matrix, W23),
    "matmul_tanh": (matmul_tanh, W23), "sum_axis": (sum_axis, W3), "mean_max": (mean_max, W3),
    "slices": (slices, W3), "where": (where, W3), "static_if": (static_if, W3),
    "python_loop": (python_loop, W3), "scan": (scan, W3), "fori": (fori, W3),
    "cond": (cond, W3), "helper_call": (helper_call, W3),
    "list_params": (list_params, [W3, W3[::-1].copy()]), "dict_params": (dict_params, DICT),
    "softmax": (softmax, W3), "logsumexp": (logsumexp, W3), "concatenate": (concatenate, W3),
    "stack": (stack, W3), "reshape_transpose": (reshape_transpose, W3), "at_set": (at_set, W3),
    "list_append": (list_append, W3), "conditional_expression": (conditional_expression, W3),
    "mlp": (mlp, DICT),
}
X = np.array([0.3, -0.7, 1.1])          # away from where's and max's ties and kinks

# --- the transforms -----------------------------------------------------------------------------


def t_grad(g):
    return secant.grad(lambda x, w: snp.sum(g(x, w)))


def t_jvp(g):
    return lambda x, w: secant.jvp(lambda y: g(y, w), (x,), (snp.ones_like(x),))[1]


def t_vmap(g):
    return secant.vmap(g, (0, None))


def t_vmap0(g):
    return secant.vmap(g)


def t_jit(g):
    return secant.jit(g)


def t_jacfwd(g):
    return secant.jacfwd(g)


def t_jacrev(g):
    return secant.jacrev(g)


def t_hessian(g):
    return secant.hessian(g)


TRANSFORMS = {"grad": t_grad, "jvp": t_jvp, "vmap": t_vmap, "vmap0": t_vmap0, "jit": t_jit,
              "jacfwd": t_jacfwd, "jacrev": t_jacrev, "hessian": t_hessian}


def _tree_map(fn, *trees):
    t = trees[0]
    if isinstance(t, dict):
        return {k: _tree_map(fn, *[u[k] for u in trees]) for k in t}
    if isinstance(t, (list, tuple)):
        return type(t)(_tree_map(fn, *u) for u in zip(*trees))
    return fn(*trees)


def batch_of(x, shift):
    """Two examples: x and a shifted copy (away from ties)."""
    x = np.asarray(x, dtype=np.float64)
    return np.stack([x, x * 0.9 + shift])


def args_after(name, x, w):
    """The arguments the transformed function is called with."""
    if name == "vmap":
        return batch_of(x, 0.05), w
    if name == "vmap0":
        return batch_of(x, 0.05), _tree_map(lambda a: batch_of(a, 0.1), w)
    return x, w


def _fd_jac(fn, x, h=1e-6):
    """d fn / d x by central differences: shape fn(x).shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        e = e.reshape(x.shape)
        cols.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * h))
    out = np.stack(cols, axis=-1)
    return out.reshape(np.shape(fn(x)) + x.shape)


def reference(name, g, x, w):
    """What transform `name` of g gives at (x, w) (after args_after), computed numerically."""
    call = lambda y: np.asarray(g(snp.asarray(y), w), dtype=np.float64)      # noqa: E731
    if name == "grad":
        return _fd_jac(lambda y: np.sum(call(y)), x)
    if name == "jvp":
        h = 1e-6
        return (call(x + h) - call(x - h)) / (2 * h)
    if name == "vmap":
        return np.stack([call(xi) for xi in x])
    if name == "vmap0":
        return np.stack([np.asarray(g(snp.asarray(x[i]), _tree_map(lambda a: a[i], w)))
                         for i in range(len(x))])
    if name == "jit":
        return call(x)
    if name in ("jacfwd", "jacrev"):
        return _fd_jac(call, x)
    if name == "hessian":
        return _fd_jac(lambda y: _fd_jac(call, y, 1e-4), x, 1e-4)
    raise KeyError(name)


# the sweep's deepest chains (innermost first): tests/test_deep_compositions.py runs each in
# every profile, so the sweep's default profile leaves them out
DEEP_CHAINS = [("scan", ("hessian", "jit", "grad")), ("cond", ("hessian", "jacrev", "grad")),
               ("helper_call", ("hessian", "hessian", "grad")), ("scan", ("hessian", "grad")),
               ("cond", ("jacfwd", "jacrev", "grad"))]
TOLERANCE = {"hessian": 2e-5}


def compose(fname, chain_names):
    """(secant function of the whole chain, the secant function one layer in, the inner's
    arguments, the outer's arguments)."""
    f, w = FUNCTIONS[fname]
    g, x = f, X
    inner = inner_args = None
    for name in chain_names:
        inner, inner_args = g, (x, w)
        g = TRANSFORMS[name](g)
        x, w = args_after(name, x, w)
    return g, inner, inner_args, (x, w)


def check(fname, chain_names):
    """Raises AssertionError when the outermost layer's value is wrong (any other exception is
    secant's); returns the value."""
    g, inner, _, (x, w) = compose(fname, chain_names)
    got = np.asarray(g(snp.asarray(x), w))
    want = reference(chain_names[-1], inner, x, w)
    tol = TOLERANCE.get(chain_names[-1], 1e-6)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    return got


def classify(fname, chain_names):
    try:
        check(fname, chain_names)
        return "ok", ""
    except AssertionError as e:
        return "WRONG", str(e).strip().splitlines()[0][:200]
    except Exception as e:      # noqa: BLE001
        msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        return type(e).__name__, msg


if __name__ == "__main__":
    import itertools
    import signal
    import sys
    import time

    secant.config.update("enable_x64", True)
    depth = [int(d) for d in sys.argv[1].split(",")] if len(sys.argv) > 1 else [1, 2]
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(FUNCTIONS)
    tnames = sys.argv[3].split(",") if len(sys.argv) > 3 else list(TRANSFORMS)

    def alarm(*_):
        raise TimeoutError("case took over 60 s")
    signal.signal(signal.SIGALRM, alarm)
    counts = {}
    for d in depth:
        for chain_names in itertools.product(tnames, repeat=d):
            for fname in names:
                t0 = time.time()
                signal.alarm(60)
                status, msg = classify(fname, list(chain_names))
                signal.alarm(0)
                c = counts.setdefault(d, [0, 0])
                c[0] += status == "ok"
                c[1] += 1
                if status != "ok":
                    print(f"{status:14s} {fname:22s} {'/'.join(chain_names):24s} {msg}",
                          flush=True)
                elif time.time() - t0 > 10:
                    print(f"slow {time.time() - t0:.0f}s {fname} {'/'.join(chain_names)}")
    for d, (ok, n) in counts.items():
        print(f"depth {d}: {ok}/{n} pass")
