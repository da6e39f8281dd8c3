"""Registry walk of the library: every public function of secant.numpy (and of numpy.linalg,
numpy.fft, scipy.special, scipy.stats, scipy.linalg, nn, nn.initializers where they exist) has
a Case in tests/library_cases/ (so its values, jit, vmap and, where differentiable, grad and jvp
are checked by tests/test_library_cases.py), or an entry in EXEMPT saying why it needs none.

The op-level walks are the other half: every op of transformer/ops.py has a batching rule
(tests/test_vmap.py), every differentiable op a forward rule (tests/test_jvp.py) and a reverse
rule (tests/test_grad_rules.py). Here, each secant.numpy function with a differentiable Case is
checked to reach those rules: it is an op, or has a source (secant/numpy/composite.py).
"""
import importlib
import importlib.util
import inspect
import pkgutil
import types

import pytest

from tests import library_cases

# module -> the prefix its functions have in Case names
MODULES = {
    "secant.numpy": "numpy",
    "secant.numpy.linalg": "numpy.linalg",
    "secant.numpy.fft": "numpy.fft",
    "secant.scipy.special": "scipy.special",
    "secant.scipy.stats": "scipy.stats",
    "secant.scipy.linalg": "scipy.linalg",
    "secant.nn": "nn",
    "secant.nn.initializers": "nn.initializers",
    "secant.example_libraries.stax": "example_libraries.stax",
    "secant.example_libraries.optimizers": "example_libraries.optimizers",
}

# One table: public functions that need no Case, grouped by the reason.
EXEMPT = {
    "issue 15 (lib15e): packbits / unpackbits (secant/numpy/bits.py, integers: no derivative), "
    "the arrays from host data (secant/numpy/host_io.py; fromiter / fromfile refused as JAX "
    "refuses them) and jax.nn's scaled matmul family: checked against NumPy, central "
    "differences, jit and loops in tests/test_lib15e_numpy.py and tests/test_lib15e_nn.py":
        {"numpy.packbits", "numpy.unpackbits", "numpy.frombuffer", "numpy.fromstring",
         "numpy.from_dlpack", "numpy.load", "numpy.save", "numpy.savez", "numpy.fromiter",
         "numpy.fromfile", "nn.scaled_matmul", "nn.scaled_dot_general",
         "nn.get_scaled_dot_general_config"},
    "issue 15 (lib15e): jnp.frompyfunc and its ufunc's methods (secant/numpy/ufunc_class.py: "
    "folds of the function, eager and jit; grad and vmap of the methods a strict xfail): "
    "checked against NumPy folds in tests/test_lib15e_numpy.py":
        {"numpy.frompyfunc", "numpy.ufunc.accumulate", "numpy.ufunc.at", "numpy.ufunc.outer",
         "numpy.ufunc.reduce", "numpy.ufunc.reduceat"},
    "issue 15 (lib15d): histogramdd, histogram2d and unique_all (secant/numpy/more_names.py) "
    "and nn.initializers.delta_orthogonal: checked against NumPy, the closed-form gradient "
    "in the weights, jit and loops in tests/test_lib15d_numpy.py and "
    "tests/test_lib15d_more_api.py":
        {"numpy.histogramdd", "numpy.histogram2d", "numpy.unique_all",
         "nn.initializers.delta_orthogonal"},
    "jax.numpy / jax.nn names added for JAX programs (secant/numpy/more.py, secant/nn): "
    "compositions read as source, checked against NumPy, finite differences and loops in "
    "tests/test_api18_numpy_more.py and tests/test_api18_nn_more.py; the index tables, "
    "windows and dtype queries are static values":
        {"nn.identity", "nn.log1mexp", "nn.logmeanexp", "nn.sparse_sigmoid", "nn.tanh",
         "numpy.array_equal", "numpy.array_equiv", "numpy.bartlett", "numpy.bitwise_invert",
         "numpy.bitwise_left_shift", "numpy.bitwise_right_shift", "numpy.blackman",
         "numpy.can_cast", "numpy.corrcoef", "numpy.cov", "numpy.diag_indices",
         "numpy.diag_indices_from", "numpy.digitize", "numpy.fill_diagonal", "numpy.hamming",
         "numpy.hanning", "numpy.isin", "numpy.isscalar", "numpy.iterable", "numpy.ix_",
         "numpy.ldexp", "numpy.matvec", "numpy.modf", "numpy.polyadd", "numpy.polyder",
         "numpy.polyint", "numpy.polymul", "numpy.polysub", "numpy.pow", "numpy.trapezoid",
         "numpy.tril_indices", "numpy.tril_indices_from", "numpy.triu_indices",
         "numpy.triu_indices_from", "numpy.unstack", "numpy.vecmat"},
    "issue 15's coverage list (secant/numpy/more_api.py, numpy/linalg.py, scipy/special.py, "
    "nn.dot_product_attention): read as source, checked against NumPy/SciPy, central "
    "differences and loops in tests/test_numpy_more_api.py, test_linalg_api.py, "
    "test_special_api.py, test_scipy_linalg_api.py and test_attention.py; mgrid/ogrid are "
    "static grids":
        {"nn.dot_product_attention", "numpy.choose", "numpy.compress", "numpy.extract",
         "numpy.frexp", "numpy.gcd", "numpy.geomspace", "numpy.i0", "numpy.intersect1d",
         "numpy.lcm", "numpy.lexsort", "numpy.linalg.cond", "numpy.linalg.cross",
         "numpy.linalg.diagonal", "numpy.linalg.matmul", "numpy.linalg.matrix_norm",
         "numpy.linalg.matrix_transpose", "numpy.linalg.outer", "numpy.linalg.tensordot",
         "numpy.linalg.tensorinv", "numpy.linalg.tensorsolve", "numpy.linalg.trace",
         "numpy.linalg.vecdot", "numpy.linalg.vector_norm", "numpy.mgrid", "numpy.nanmedian",
         "numpy.nanpercentile", "numpy.nanquantile", "numpy.ogrid", "numpy.polyfit",
         "numpy.ravel_multi_index", "numpy.resize", "numpy.roots", "numpy.setdiff1d",
         "numpy.trim_zeros", "numpy.union1d", "numpy.unravel_index", "numpy.unwrap",
         "scipy.special.beta", "scipy.special.comb", "scipy.special.factorial",
         "scipy.special.gamma", "scipy.special.gammasgn", "scipy.special.kl_div",
         "scipy.special.log_softmax", "scipy.special.loggamma", "scipy.special.poch",
         "scipy.special.rel_entr", "scipy.special.softmax", "scipy.linalg.eigh",
         "scipy.linalg.qr", "scipy.linalg.svd", "scipy.linalg.block_diag",
         "scipy.linalg.toeplitz"},
    "issue 15 (linalg15c): scipy.linalg's Schur family, polar, expm_frechet, "
    "eigh_tridiagonal, qr_multiply and matrices of an array: checked against SciPy (float64 "
    "and float32, eager and jit), central differences and loops in "
    "tests/test_linalg15c_schur.py and test_linalg15c_more.py; schur, hessenberg, funm and "
    "solve_sylvester have no derivative, as JAX's (its NotImplementedError, tested there)":
        {"scipy.linalg." + n for n in (
            "schur", "hessenberg", "rsf2csf", "funm", "solve_sylvester", "polar",
            "expm_frechet", "eigh_tridiagonal", "qr_multiply", "convolution_matrix", "fiedler",
            "fiedler_companion", "leslie")},
    "no array argument (linalg15c): exact constants of a size, checked against SciPy in "
    "tests/test_linalg15c_more.py":
        {"scipy.linalg." + n for n in (
            "dft", "hadamard", "helmert", "invhilbert", "pascal", "invpascal")},
    "issue 15's jax.scipy.special / stats names (secant/scipy/special_more.py, stats/poisson.py): "
    "read as source, checked against SciPy (float64, float32, edges), jit, vmap against loops "
    "and gradients against closed forms and central differences in tests/test_lib15c_special.py "
    "and tests/test_lib15c_stats.py":
        {"scipy.special.bessel_jn", "scipy.special.dawsn", "scipy.special.fresnel",
         "scipy.special.hyp1f1", "scipy.special.hyp2f1", "scipy.special.owens_t",
         "scipy.special.sici", "scipy.special.spence", "scipy.special.sph_harm_y",
         "scipy.special.wofz", "scipy.stats.poisson.entropy"},
    "no array argument: built from shapes and static values, a constant under every transform":
        {"scipy.special.bernoulli", "scipy.linalg.hilbert", "numpy.zeros", "numpy.ones", "numpy.empty", "numpy.arange", "numpy.eye",
         "numpy.identity", "numpy.tri", "numpy.indices", "numpy.broadcast_shapes"},
    "static queries of shapes and dtypes: never a traced value, constants under every "
    "transform (einsum_path reads shapes, mask_indices a static pattern; checked against "
    "NumPy in tests/test_numpy_more_names.py)": {"numpy.einsum_path", "numpy.isdtype",
                                                 "numpy.mask_indices",
                  "numpy.shape", "numpy.ndim", "numpy.size", "numpy.result_type",
                  "numpy.iscomplexobj", "numpy.isrealobj", "numpy.dtype_weak",
                  "numpy.is_array"},
    "the library's own conversion helpers, exported by secant.numpy's re-export of every "
    "public name of its modules (not NumPy API)":
        {"numpy.convert", "numpy.promote", "numpy.promote_inexact", "numpy.to_inexact",
         "numpy.ensure_array", "numpy.full_like_bool"},
    "initializers: functions of a PRNG key and a shape, whose results are random draws (their "
    "statistics, dtypes, determinism per key, jit and vmap over keys: tests/test_nn.py)":
        {"nn.initializers." + n for n in (
            "constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
            "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal",
            "ones", "orthogonal", "truncated_normal", "uniform", "variance_scaling",
            "xavier_normal", "xavier_uniform", "zeros")},
    "example_libraries: layer constructors returning (init_fun, apply_fun), optimizer makers "
    "returning (init, update, get_params), schedules and pytree utilities, not array functions "
    "of their own; tests/test_stax_optimizers.py checks them (values against NumPy and jax's "
    "stax, grad against finite differences, jit, vmap, each optimizer's steps against NumPy)":
        {"example_libraries.stax." + n for n in (
            "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense",
            "Dropout", "FanInConcat", "FanOut", "GeneralConv", "GeneralConvTranspose",
            "MaxPool", "SumPool", "elementwise", "parallel", "serial", "shape_dependent")}
        | {"example_libraries.optimizers." + n for n in (
            "adagrad", "adam", "adamax", "clip_grads", "constant", "exponential_decay",
            "inverse_time_decay", "l2_norm", "make_schedule", "momentum", "nesterov",
            "optimizer", "pack_optimizer_state", "piecewise_constant", "polynomial_decay",
            "rmsprop", "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state")},
    "stax's re-exports of secant.nn activations and initializers (jax's stax exports them too; "
    "their Cases are under nn. and nn.initializers.)":
        {"example_libraries.stax." + n for n in (
            "elu", "gelu", "leaky_relu", "log_softmax", "logsoftmax", "relu", "selu", "sigmoid",
            "softmax", "softplus", "standardize", "glorot", "glorot_normal", "normal", "ones",
            "randn", "zeros")},
    # known gaps: each raises a clear error under the transform it lacks (never a wrong value)
}

# secant.numpy functions whose traced arguments the transformer handles itself (a list of
# traced values is stacked first: transformer/containers.py), not through an op or a source
BY_TRANSFORMER = {"numpy.array", "numpy.asarray", "numpy.r_", "numpy.c_"}


def _case_names():
    names = {}
    for info in pkgutil.iter_modules(library_cases.__path__):
        mod = importlib.import_module(f"tests.library_cases.{info.name}")
        for case in getattr(mod, "CASES", ()):
            names.setdefault(case.name, []).append(case)
    return names


def _available(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:     # a parent package that does not exist
        return False


def _public(module, prefix):
    """name -> object for every public function of a module (__all__ where it has one); a
    namespace inside it (scipy.stats.norm) contributes its own functions as prefix.ns.fn."""
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    out = {}
    for n in names:
        obj = getattr(mod, n)
        if any(part.startswith("_") for part in
               (getattr(obj, "__module__", "") or "").split(".")) and callable(obj) \
                and not inspect.isclass(obj):
            continue                        # a helper imported from a private module
        if inspect.isclass(obj) and issubclass(obj, tuple):
            continue                        # a result type (QRResult, ...): a namedtuple
        if inspect.isclass(obj) and (getattr(obj, "__module__", "") or "").startswith("secant"):
            for m in dir(obj):              # a class (gaussian_kde): its public methods
                if not m.startswith("_") and callable(getattr(obj, m)):
                    out[f"{prefix}.{n}.{m}"] = getattr(obj, m)
            continue
        if hasattr(type(obj), "__getitem__") and not callable(obj) and \
                type(obj).__module__.startswith("secant"):
            out[f"{prefix}.{n}"] = obj      # an index trick (r_, c_): read by the transformer
            continue
        if isinstance(obj, types.ModuleType):
            if obj.__name__ in MODULES or not obj.__name__.startswith(module + "."):
                continue                    # a listed module of its own, or an import
            out.update(_public(obj.__name__, f"{prefix}.{n}"))
        elif callable(obj) and not inspect.isclass(obj) or inspect.isclass(obj) and \
                getattr(obj, "__module__", "").startswith("secant"):
            if getattr(mod, "__all__", None) is None and \
                    not (getattr(obj, "__module__", "") or "").startswith("secant"):
                continue                    # numpy's dtypes and other imports
            out[f"{prefix}.{n}"] = obj
        elif not callable(obj) and hasattr(obj, "__dict__") and \
                type(obj).__module__.startswith("secant"):
            # a distribution-like object (scipy.stats.norm): its public methods
            for m in dir(obj):
                if not m.startswith("_") and callable(getattr(obj, m)):
                    out[f"{prefix}.{n}.{m}"] = getattr(obj, m)
    return out


def _functions():
    out = {}
    for module, prefix in MODULES.items():
        if _available(module):
            out.update(_public(module, prefix))
    return out


def test_every_public_function_has_a_case_or_an_exemption():
    cases = _case_names()
    exempt = set().union(*EXEMPT.values())
    missing = sorted(n for n in _functions() if n not in cases and n not in exempt)
    assert not missing, (f"{len(missing)} public functions have neither a Case in "
                         f"tests/library_cases/ nor an entry in EXEMPT: {missing}")


def test_the_exemption_table_is_current():
    cases = _case_names()
    functions = _functions()
    groups = list(EXEMPT.values())
    twice = sorted(n for i, g in enumerate(groups) for n in g
                   if any(n in h for h in groups[i + 1:]))
    assert not twice, f"exempted in two groups: {twice}"
    with_cases = sorted(n for g in groups for n in g if n in cases)
    assert not with_cases, f"exempted but checked by a Case (delete the entry): {with_cases}"
    stale = sorted(n for g in groups for n in g if n not in functions)
    assert not stale, f"exempted but not a public function: {stale}"


def test_case_names_are_public_functions():
    """A Case's name is what the registry counts: it must name a function that exists."""
    functions = _functions()
    available = [p for m, p in MODULES.items() if _available(m)]
    unknown = sorted(n for n in _case_names() if n not in functions
                     and any(n.startswith(p + ".") for p in available)
                     and not any(n.startswith(p + ".") and m != "secant.numpy"
                                 for m, p in MODULES.items() if not _available(m)))
    assert not unknown, f"Cases named after no public function: {unknown}"


def test_differentiable_numpy_functions_reach_rules():
    """Each secant.numpy function with a differentiable Case is an op with rules (whose rows
    the op walks check) or has a source the transforms read; a function whose Cases are all
    non-differentiable resolves to a non-differentiable op or a source (a composite's, or
    its own in a module the transforms read as source)."""
    from secant.transformer.ops import OPS, op_for
    import secant.numpy as snp
    cases = _case_names()
    wrong = []
    for name in snp.__all__:
        full = "numpy." + name
        if full not in cases or full in BY_TRANSFORMER:
            continue
        fn = getattr(snp, name)
        op = op_for(fn)
        if getattr(fn, "__secant_composite__", None) is not None or \
                getattr(fn, "__globals__", {}).get("__secant_by_source__"):     # read as source
            continue
        if op is None:
            wrong.append((name, "neither an op nor a source"))
        elif any(c.differentiable for c in cases[full]) and not OPS[op].differentiable:
            wrong.append((name, f"op {op} is marked non-differentiable"))
    assert not wrong, wrong


@pytest.mark.parametrize("module", [m for m in MODULES if m != "secant.numpy"])
def test_listed_modules_import_when_present(module):
    """A module that exists imports (so its functions are counted, not silently skipped)."""
    if not _available(module):
        pytest.skip(f"{module} does not exist yet")
    importlib.import_module(module)


def count():
    """(public functions, functions with a Case, exempted) per module, for the issue note."""
    cases = _case_names()
    exempt = set().union(*EXEMPT.values())
    rows = {}
    for module, prefix in MODULES.items():
        if not _available(module):
            continue
        names = _public(module, prefix)
        rows[module] = (len(names), sum(n in cases for n in names),
                        sum(n in exempt for n in names))
    return rows


if __name__ == "__main__":
    for module, (n, c, e) in count().items():
        print(f"{module}: {n} public functions, {c} with Cases, {e} exempted")
