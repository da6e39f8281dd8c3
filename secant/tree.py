"""secant.tree, as jax.tree: the pytree functions of secant.tree_util under short names
(tree.map is tree_util.tree_map, ...)."""
from secant.tree_util import (tree_all as all, tree_flatten as flatten,  # noqa: F401
                              tree_flatten_with_path as flatten_with_path,
                              tree_leaves as leaves, tree_leaves_with_path as leaves_with_path,
                              tree_map as map, tree_map_with_path as map_with_path,
                              tree_reduce as reduce, tree_structure as structure,
                              tree_transpose as transpose, tree_unflatten as unflatten,
                              tree_broadcast as broadcast,
                              tree_reduce_associative as reduce_associative,
                              register_static as static)

__all__ = ["all", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
           "map_with_path", "reduce", "structure", "transpose", "unflatten", "broadcast",
           "reduce_associative", "static"]
