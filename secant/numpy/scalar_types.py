"""secant.numpy's scalar type names (snp.float32, snp.int32, ...): dtypes that are also casts, as
jax.numpy's are. `snp.float32(x)` is `snp.asarray(x, dtype=float32)` (a traced value too, under
jit; its derivative is the cast's: zero into integer types), while the name still works wherever
a dtype goes: `dtype=snp.float32`, `x.astype(snp.int32)`, `snp.dtype(snp.float32)` (the class
carries `.dtype`, which np.dtype reads), `snp.issubdtype(snp.int32, snp.integer)`, `==` and
hashing as NumPy's scalar type."""
import numpy as np


class _ScalarMeta(type):
    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or other == cls.dtype.type

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x):
        from secant.numpy import asarray
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'secant.numpy.{cls.__name__}'>"


def scalar_type(np_type, name=None):
    """The secant.numpy name of NumPy's scalar type `np_type`."""
    dt = np.dtype(np_type)
    return _ScalarMeta(name or dt.name, (object,), {"dtype": dt, "__module__": "secant.numpy",
                                                    "__doc__": f"The {dt.name} dtype; called, "
                                                    "a cast to it."})


def is_scalar_type(obj):
    """A secant.numpy scalar type name (snp.float32) or NumPy's (np.float32)."""
    return isinstance(obj, _ScalarMeta) or (isinstance(obj, type) and issubclass(obj, np.generic)
                                            and obj not in _ABSTRACT)


_ABSTRACT = (np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger,
             np.inexact, np.floating, np.complexfloating, np.flexible, np.character)
