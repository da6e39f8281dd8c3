"""Reductions with jnp's where= and initial= (and where(c, size=n)), issue 15 task reduce15w:
the programs tests/test_reduce15w_masks.py transforms, written once for a numpy module `np`
(jax.numpy for bench/reduce15w_oracle.py, which records JAX's outcomes in
tests/reduce15w_expected.py; secant.numpy for the tests)."""
import numpy as onp

X = onp.array([[1., -2., 3.], [0.5, 4., -1.]])
M = X > 0                                               # two or one kept per row
M2 = onp.array([[True, True, False], [True, False, True]])  # two kept per row (ddof=1)
EMPTY_ROW = onp.array([[True, False, True], [False, False, False]])   # mean of nothing: nan


def cases(np):
    return {
        "sum_where": lambda x: np.sum(x ** 2, where=M),
        "sum_where_axis_keepdims": lambda x: (np.sum(np.sin(x), where=M, axis=0, keepdims=True)
                                              * x).sum(),
        "sum_where_traced_mask": lambda x: np.sum(x ** 3, where=x < 2.0, axis=1).sum(),
        "sum_initial": lambda x: (np.sum(x, axis=1, initial=2.0) ** 2).sum(),
        "sum_method_where": lambda x: (x * x).sum(where=M2, axis=1)[1],
        "prod_where": lambda x: np.prod(x, where=M, axis=1).sum(),
        "prod_where_initial": lambda x: np.prod(x, where=M2, initial=3.0),
        "max_initial": lambda x: np.max(x, initial=2.0, axis=0).sum(),
        "max_where_initial": lambda x: np.max(x, where=M, initial=-10.0),
        "min_where_traced": lambda x: np.min(x ** 2, where=x < 2.0, initial=5.0, axis=1).sum(),
        "amin_initial_keepdims": lambda x: (np.amin(x, axis=1, initial=0.0, keepdims=True)
                                            * x).sum(),
        "mean_where_axis": lambda x: np.mean(np.sin(x), where=M, axis=1).sum(),
        "mean_where_broadcast": lambda x: np.mean(x * x, where=M2[0], axis=(0, 1)),
        "mean_where_traced": lambda x: np.mean(x ** 3, where=x > 0),
        "mean_where_keepdims": lambda x: (np.mean(x, where=M, axis=0, keepdims=True) * x).sum(),
        "mean_method_where": lambda x: x.mean(where=M2, axis=1)[0] * 3.0,
        "mean_empty_row": lambda x: np.mean(np.exp(x), where=EMPTY_ROW, axis=1)[0],
        "var_where": lambda x: np.var(x, where=M),
        "var_where_ddof_axis": lambda x: np.var(x, where=M2, axis=1, ddof=1).sum(),
        "std_where_axis": lambda x: np.std(x * x, where=M2, axis=1).sum(),
        "std_where_keepdims": lambda x: (np.std(x, where=M, keepdims=True) * x).sum(),
        "var_method_where": lambda x: x.var(where=M2, axis=1, ddof=1)[1],
        "where_one_arg": lambda x: (x[np.where(M, size=3)] ** 2).sum(),
        "where_one_arg_traced": lambda x: (x[np.where(x > 0, size=3)] ** 2).sum(),
        "where_one_arg_fill": lambda x: x.ravel()[np.where(M.ravel(), size=5,
                                                           fill_value=1)[0]].sum(),
        "any_all_where": lambda x: (np.where(np.any(x > 2, where=M, axis=1), 1.0, 2.0)
                                    @ x[:, 0] + np.where(np.all(x < 3.5, where=M), x[0, 0], 0.0)),
    }


# a kept entry equal to initial (X[1, 1] == 4.0) where some entries are masked out
def tie_cases(np):
    return {
        "max_where_tie": lambda x: np.max(x, where=M, initial=4.0),
        "min_where_tie_axis": lambda x: np.min(x, where=M, initial=0.5, axis=1).sum(),
    }


# int inputs: jnp's result dtypes (the traced x only scales the result)
INTS = onp.array([[1, 2, 3], [4, 5, 6]], dtype=onp.int32)


def dtype_cases(np):
    return {
        "int_sum_where": lambda x: np.sum(INTS, where=x > 0),
        "int_mean_where": lambda x: np.mean(INTS, where=x > 0, axis=1),
        "int_max_where": lambda x: np.max(INTS, where=x > 0, initial=0),
        "int_max_float_initial": lambda x: np.max(INTS, where=x > 0, initial=2.5, axis=1),
        "int_var_where": lambda x: np.var(INTS, where=x > 0),
        "bool_sum_where": lambda x: np.sum(INTS > 2, where=x > 0, axis=0),
        "f32_mean_where": lambda x: np.mean(x.astype(np.float32), where=x > 0),
    }
