"""secant.backends: the ground floor.

Primitives (definition, shape/dtype rule, NumPy implementation), the eager Array, the StableHLO
tracer and emitter, and the PJRT runtime adapter (`runtime`, the only module touching jaxlib).
Nothing here imports from the layers above.
"""
