"""per-call time of grad / jit(grad) of a function defining a @custom_vjp (and @custom_jvp) anew
at each call, against the same rule defined at module level."""
import time, numpy as np
import secant.numpy as jnp
from secant import grad, jit, jvp, custom_vjp, custom_jvp

@custom_vjp
def top(x, c): return jnp.sin(x) * c
def top_f(x, c): return top(x, c), (x, c)
def top_b(res, g):
    x, c = res
    return (g * jnp.cos(x) * c, None)
top.defvjp(top_f, top_b)

def outer_top(x, c):
    return jnp.sum(top(x, c) * 2.0)

def outer_nested(x, c):
    @custom_vjp
    def h(x):
        return jnp.sin(x) * c
    def h_f(x):
        return h(x), x
    def h_b(x, g):
        return (g * jnp.cos(x) * c,)
    h.defvjp(h_f, h_b)
    return jnp.sum(h(x) * 2.0)

def outer_nested_jvp(x, c):
    @custom_jvp
    def h(x):
        return jnp.exp(x) * c
    @h.defjvp
    def h_jvp(p, t):
        return h(p[0]), jnp.exp(p[0]) * c * t[0]
    return jnp.sum(h(x))

def nested_jvp_at_c(x):
    return outer_nested_jvp(x, 1.5)

def bench(fn, *args, n=30):
    fn(*args)
    t = time.perf_counter()
    for i in range(n):
        fn(*args)
    return (time.perf_counter() - t) / n * 1e3

x = np.linspace(0, 1, 8).astype(np.float32)
for name, f in [("module custom_vjp", outer_top), ("nested custom_vjp", outer_nested)]:
    print(f"{name:24s} grad {bench(grad(f), x, 1.5):7.2f} ms/call   jit(grad) {bench(jit(grad(f)), x, 1.5):7.2f} ms/call")
print(f"{'nested custom_jvp':24s} jvp  {bench(lambda x: jvp(nested_jvp_at_c, (x,), (x,)), x):7.2f} ms/call")
