"""Classic optimisation test functions in n dimensions (Rosenbrock, Beale, Himmelblau, Ackley,
Rastrigin, Styblinski-Tang, Griewank) and numerical recipes as users write them (issue 15,
explore15i): Newton iteration, bisection in a while loop then a Newton polish, the secant
method, Horner, Clenshaw, trapezoid and Simpson integration, finite-difference stencils, a
Gauss-Seidel sweep with in-place `.at[].set`, Jacobi by fori_loop, RK4, power iteration,
Lagrange interpolation, Richardson extrapolation, a heat-equation step."""
import numpy as np

import secant.numpy as jnp
from secant import lax

from corpus import Case, pos, vec

P5 = vec(750, 5)


# --- optimisation test functions -------------------------------------------------------------------
def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def beale(p):
    x, y = p[0], p[1]
    return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y ** 2) ** 2 + (2.625 - x + x * y ** 3) ** 2


def himmelblau(p):
    x, y = p
    return (x ** 2 + y - 11) ** 2 + (x + y ** 2 - 7) ** 2


def ackley(x):
    n = x.shape[0]
    a = -20.0 * jnp.exp(-0.2 * jnp.sqrt(jnp.sum(x ** 2) / n))
    b = -jnp.exp(jnp.sum(jnp.cos(2 * jnp.pi * x)) / n)
    return a + b + 20.0 + jnp.e


def rastrigin(x):
    return 10.0 * x.size + jnp.sum(x ** 2 - 10.0 * jnp.cos(2 * np.pi * x))


def styblinski_tang(x):
    return 0.5 * jnp.sum(x ** 4 - 16 * x ** 2 + 5 * x)


def griewank(x):
    i = jnp.arange(1, x.shape[0] + 1)
    return 1.0 + jnp.sum(x ** 2) / 4000.0 - jnp.prod(jnp.cos(x / jnp.sqrt(i)))


def gd_on_rosenbrock(x0):
    """a few gradient-descent steps, the gradient written by hand"""
    x = x0
    for _ in range(3):
        g0 = -400.0 * x[0] * (x[1] - x[0] ** 2) - 2.0 * (1.0 - x[0])
        g1 = 200.0 * (x[1] - x[0] ** 2)
        x = x - 1e-3 * jnp.array([g0, g1])
    return rosenbrock(x)


# --- root finding ------------------------------------------------------------------------------------
def newton_sqrt(a):
    x = a
    for _ in range(6):
        x = 0.5 * (x + a / x)
    return x


def newton_while(a):
    x = 1.0 + a
    step = 1.0
    while jnp.abs(step) > 1e-12:
        step = (x ** 3 - a) / (3 * x ** 2)
        x = x - step
    return x


def bisection_polish(a):
    """the cube root of a: bisection in a while loop on a counter, then three Newton steps, so
    the first three derivatives are the implicit ones"""
    lo, hi = 0.0, jnp.maximum(a, 1.0)
    i = 0
    while i < 40:
        mid = 0.5 * (lo + hi)
        above = mid ** 3 > a
        lo = jnp.where(above, lo, mid)
        hi = jnp.where(above, mid, hi)
        i += 1
    r = 0.5 * (lo + hi)
    for _ in range(3):
        r = r - (r ** 3 - a) / (3 * r ** 2)
    return r


def secant_method(a):
    x0, x1 = 0.5 + 0.0 * a, 2.0 + 0.0 * a
    for _ in range(8):
        f0, f1 = x0 * x0 - a, x1 * x1 - a
        x0, x1 = x1, x1 - f1 * (x1 - x0) / (f1 - f0)
    return x1


# --- series --------------------------------------------------------------------------------------------
def horner(x):
    coeffs = [0.5, -1.0, 2.0, 0.25, -0.75]
    acc = 0.0
    for c in coeffs:
        acc = acc * x + c
    return acc


def horner_coeffs(c, x):
    acc = jnp.zeros_like(x)
    for k in range(c.shape[0]):
        acc = acc * x + c[k]
    return jnp.sum(acc ** 2)


def clenshaw(c, x):
    b1 = jnp.zeros_like(x)
    b2 = jnp.zeros_like(x)
    for k in range(c.shape[0] - 1, 0, -1):
        b1, b2 = 2.0 * x * b1 - b2 + c[k], b1
    return jnp.sum(x * b1 - b2 + c[0])


def polyval_roots(c):
    x = jnp.linspace(-1.0, 1.0, 7)
    return jnp.sum(jnp.polyval(c, x) ** 2)


# --- integration -----------------------------------------------------------------------------------------
def trapezoid_by_hand(theta):
    t = jnp.linspace(0.0, 2.0, 21)
    f = jnp.exp(-theta[0] * t) * jnp.sin(theta[1] * t)
    dt = t[1] - t[0]
    return dt * (jnp.sum(f) - 0.5 * (f[0] + f[-1]))


def simpson_by_hand(theta):
    t = jnp.linspace(0.0, 1.0, 11)
    f = 1.0 / (1.0 + theta[0] * t ** 2) + theta[1] * jnp.cos(t)
    h = t[1] - t[0]
    return h / 3.0 * (f[0] + 4.0 * jnp.sum(f[1:-1:2]) + 2.0 * jnp.sum(f[2:-1:2]) + f[-1])


def trapezoid_library(theta):
    t = jnp.linspace(0.0, 2.0, 21)
    return jnp.trapezoid(jnp.tanh(theta[0] * t + theta[1]), t)


def richardson(x):
    def central(h):
        return (jnp.sin(x + h) - jnp.sin(x - h)) / (2 * h)
    d1, d2 = central(0.1), central(0.05)
    return (4.0 * d2 - d1) / 3.0


# --- stencils, sweeps, ODEs ------------------------------------------------------------------------------
def fd_laplacian_energy(u):
    lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
    grad_u = (u[1:] - u[:-1]) / 0.1
    return jnp.sum(lap ** 2) + 0.5 * jnp.sum(grad_u ** 2) * 0.1


def fd_2d_stencil(u):
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    return jnp.sum(lap ** 2)


def gauss_seidel(b):
    """two sweeps on the tridiagonal system (4 on the diagonal, -1 off), in place"""
    n = b.shape[0]
    x = jnp.zeros(n)
    for _ in range(2):
        for i in range(n):
            left = x[i - 1] if i > 0 else 0.0
            right = x[i + 1] if i < n - 1 else 0.0
            x = x.at[i].set((b[i] + left + right) / 4.0)
    return jnp.sum(x ** 2) + x[0]


def jacobi_fori(b):
    a = 4.0 * jnp.eye(5) - jnp.eye(5, k=1) - jnp.eye(5, k=-1)
    d = jnp.diag(a)
    r = a - jnp.diag(d)

    def body(_, x):
        return (b - r @ x) / d
    x = lax.fori_loop(0, 10, body, jnp.zeros_like(b))
    return jnp.sum(x * jnp.arange(1.0, 6.0))


def heat_step(u):
    u = jnp.asarray(u)
    for _ in range(3):
        inner = u[1:-1, 1:-1] + 0.1 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                                      - 4 * u[1:-1, 1:-1])
        u = u.at[1:-1, 1:-1].set(inner)
    return jnp.sum(u ** 2)


def rk4_pendulum(theta0):
    def rhs(s):
        return jnp.stack([s[1], -jnp.sin(s[0]) - 0.1 * s[1]])
    s = jnp.stack([theta0, 0.0])
    dt = 0.1
    for _ in range(5):
        k1 = rhs(s)
        k2 = rhs(s + 0.5 * dt * k1)
        k3 = rhs(s + 0.5 * dt * k2)
        k4 = rhs(s + dt * k3)
        s = s + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return s[0] ** 2 + s[1]


def power_iteration(a):
    m = a @ a.T + jnp.eye(a.shape[0])
    v = jnp.ones(a.shape[0])
    for _ in range(30):
        v = m @ v
        v = v / jnp.linalg.norm(v)
    return v @ m @ v


def lagrange_interp(ys):
    xs = jnp.array([0.0, 0.5, 1.0, 1.5])
    t = 0.8
    total = 0.0
    for i in range(4):
        basis = 1.0
        for j in range(4):
            if i != j:
                basis = basis * (t - xs[j]) / (xs[i] - xs[j])
        total = total + ys[i] * basis
    return total ** 2


def cumulative_trapezoid(v):
    dt = 0.1
    pos_ = jnp.concatenate([jnp.zeros(1), jnp.cumsum(0.5 * dt * (v[1:] + v[:-1]))])
    return jnp.sum(pos_ ** 2)


CASES = [
    Case("rosenbrock_nd", rosenbrock, (P5,)),
    Case("beale", beale, (vec(751, 2),)),
    Case("himmelblau", himmelblau, (vec(752, 2),)),
    Case("ackley", ackley, (P5,)),
    Case("rastrigin", rastrigin, (P5,)),
    Case("styblinski_tang", styblinski_tang, (P5,)),
    Case("griewank", griewank, (3.0 * P5,)),
    Case("gd_on_rosenbrock", gd_on_rosenbrock, (vec(753, 2),)),
    Case("newton_sqrt", newton_sqrt, (2.0,)),
    Case("newton_while", newton_while, (2.0,)),
    Case("bisection_polish", bisection_polish, (2.0,)),
    Case("secant_method", secant_method, (2.0,)),
    Case("horner", horner, (0.3,)),
    Case("horner_coeffs", horner_coeffs, (vec(754, 4), vec(755, 6))),
    Case("clenshaw", clenshaw, (vec(756, 5), vec(757, 6))),
    Case("polyval_roots", polyval_roots, (vec(758, 4),)),
    Case("trapezoid_by_hand", trapezoid_by_hand, (pos(759, 2),)),
    Case("simpson_by_hand", simpson_by_hand, (pos(760, 2),)),
    Case("trapezoid_library", trapezoid_library, (vec(761, 2),)),
    Case("richardson", richardson, (0.4,)),
    Case("fd_laplacian_energy", fd_laplacian_energy, (vec(762, 8),)),
    Case("fd_2d_stencil", fd_2d_stencil, (vec(763, 5, 5),)),
    Case("gauss_seidel", gauss_seidel, (vec(764, 5),)),
    Case("jacobi_fori", jacobi_fori, (vec(765, 5),)),
    Case("heat_step", heat_step, (vec(766, 5, 5),)),
    Case("rk4_pendulum", rk4_pendulum, (0.8,)),
    Case("power_iteration_norm", power_iteration, (vec(767, 3, 3),)),
    Case("lagrange_interp", lagrange_interp, (vec(768, 4),)),
    Case("cumulative_trapezoid", cumulative_trapezoid, (vec(769, 6),)),
]
