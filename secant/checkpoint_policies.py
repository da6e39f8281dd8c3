"""jax.checkpoint_policies: which intermediates `checkpoint(f, policy=...)` may keep from the
forward pass instead of recomputing them. A policy changes memory and time only, never a
value: secant's checkpoint recomputes every intermediate whatever the policy (as
nothing_saveable), so each policy here is accepted and gives the same derivatives as JAX's.
(A policy a user writes reads JAX's primitives, which secant does not have: secant.checkpoint
refuses it.)"""
import types


def _policy(name, saves=False):
    """A policy: accepted by secant.checkpoint, which recomputes every intermediate whatever
    it says (its answer, JAX's where JAX's is fixed, is what it would save)."""
    def policy(*_, **__):
        return saves
    policy.__name__ = policy.__qualname__ = name
    policy.__secant_policy__ = True
    return policy


everything_saveable = _policy("everything_saveable", True)
nothing_saveable = _policy("nothing_saveable")
dots_saveable = _policy("dots_saveable")                   # (dots saved, in JAX)
dots_with_no_batch_dims_saveable = _policy("dots_with_no_batch_dims_saveable")


def _names_policy(*names):
    return _policy("save_names")


save_anything_except_these_names = save_any_names_but_these = save_only_these_names = \
    _names_policy


def save_from_both_policies(policy_1, policy_2):
    return _policy("save_from_both_policies")


def save_and_offload_only_these_names(*, names_which_can_be_saved=(),
                                      names_which_can_be_offloaded=(), offload_src=None,
                                      offload_dst=None):
    return _policy("save_and_offload_only_these_names")


def offload_dot_with_no_batch_dims(offload_src=None, offload_dst=None):
    return _policy("offload_dot_with_no_batch_dims")


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names)
