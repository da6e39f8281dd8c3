"""Forward mode and Jacobians (issue 5): hessian of a 100-dimensional function, jacfwd and jacrev
of a 100x100 map tanh(W @ x), eagerly and under jit, first call (transform + trace + compile +
run) and steady state, beside jax's when jax is installed (a benchmark-only dependency).

    .venv/bin/python bench/jacobians.py

secant's Jacobians run the generated jvp (jacfwd) or vjp (jacrev) over the whole standard basis
as one call of its generated batched function (vmap); the Hessian vmaps that again over the
outer basis."""
import numpy as np

import secant
from secant import block_until_ready as ready
import secant.numpy as snp
from timing import import_jax, once_ms, per_call_us, report

N = 100


def tanh_map(w, x):
    return snp.tanh(w @ x)


def energy(x):
    """A 100-dimensional scalar function: a quartic with nearest-neighbour coupling."""
    return snp.sum(x ** 4) - snp.sum(snp.sin(x[:-1] * x[1:])) + snp.sum(snp.tanh(x)) ** 2


def main():
    print(f"jacobians: hessian of a {N}-dim function, jacfwd/jacrev of tanh(W @ x) "
          f"({N}x{N}); eager and jit, first call and steady state")
    jax, jnp = import_jax()
    rng = np.random.default_rng(0)
    w = (rng.normal(size=(N, N)) / np.sqrt(N)).astype(np.float32)
    x = rng.normal(size=N).astype(np.float32)
    ready(secant.jit(lambda v: v + 1)(x))     # start the PJRT client first
    if jax is not None:
        jax.jit(lambda v: v + 1)(x).block_until_ready()

        def tanh_map_jax(w, x):
            return jnp.tanh(w @ x)

        def energy_jax(x):
            return jnp.sum(x ** 4) - jnp.sum(jnp.sin(x[:-1] * x[1:])) + jnp.sum(jnp.tanh(x)) ** 2
    cases = [
        ("jacfwd tanh(W @ x)", lambda: secant.jacfwd(tanh_map, argnums=1), (w, x),
         (lambda: jax.jacfwd(tanh_map_jax, argnums=1)) if jax else None),
        ("jacrev tanh(W @ x)", lambda: secant.jacrev(tanh_map, argnums=1), (w, x),
         (lambda: jax.jacrev(tanh_map_jax, argnums=1)) if jax else None),
        ("hessian energy", lambda: secant.hessian(energy), (x,),
         (lambda: jax.hessian(energy_jax)) if jax else None),
    ]
    for label, make, args, make_jax in cases:
        # first calls: a fresh transform each (eager: generation + N calls; jit: + trace, compile)
        f = make()
        first_eager = once_ms(lambda: ready(f(*args)))
        steady_eager = per_call_us(lambda: ready(f(*args)), rounds=3) / 1e3
        fj = secant.jit(make())
        first_jit = once_ms(lambda: ready(fj(*args)))
        steady_jit = per_call_us(lambda: ready(fj(*args)))
        jax_first = jax_steady = jax_eager = None
        if make_jax is not None:
            gj = jax.jit(make_jax())
            jax_first = once_ms(lambda: gj(*args).block_until_ready())
            jax_steady = per_call_us(lambda: gj(*args).block_until_ready())
            ge = make_jax()
            jax_eager = per_call_us(lambda: ge(*args).block_until_ready(), rounds=3) / 1e3
        want = np.asarray(f(*args))
        np.testing.assert_allclose(np.asarray(fj(*args)), want, rtol=2e-3, atol=2e-4)
        report(f"{label}: eager first call", first_eager, None, "ms")
        report(f"{label}: eager steady", steady_eager, jax_eager, "ms")
        report(f"{label}: jit first call", first_jit, jax_first, "ms")
        report(f"{label}: jit steady", steady_jit, jax_steady, "µs")


if __name__ == "__main__":
    main()
