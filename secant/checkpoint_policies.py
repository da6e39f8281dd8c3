"""jax.checkpoint_policies: which intermediates `checkpoint(f, policy=...)` may keep from the
forward pass instead of recomputing them. A policy changes memory and time only, never a
value: secant's checkpoint recomputes every intermediate whatever the policy (as
nothing_saveable), so each policy here is accepted and gives the same derivatives as JAX's.
(A policy a user writes reads JAX's primitives, which secant does not have: secant.checkpoint
refuses it.)"""
import types


def _policy(fn):
    fn.__secant_policy__ = True
    return fn


@_policy
def everything_saveable(*_, **__):
    return True


@_policy
def nothing_saveable(*_, **__):
    return False


@_policy
def dots_saveable(*_, **__):
    """(dots and matmuls saved, in JAX)"""
    return False


@_policy
def dots_with_no_batch_dims_saveable(*_, **__):
    """(dots without batch dimensions saved, in JAX)"""
    return False


def _names_policy(*names):
    return _policy(lambda *_, **__: False)


save_anything_except_these_names = save_any_names_but_these = save_only_these_names = \
    _names_policy


def save_from_both_policies(policy_1, policy_2):
    return _policy(lambda *_, **__: False)


def save_and_offload_only_these_names(*, names_which_can_be_saved=(),
                                      names_which_can_be_offloaded=(), offload_src=None,
                                      offload_dst=None):
    return _policy(lambda *_, **__: False)


def offload_dot_with_no_batch_dims(offload_src=None, offload_dst=None):
    return _policy(lambda *_, **__: False)


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
