"""Shared test setup: hypothesis profiles, the x64 fixture, and the order in which `make test`
hands files to its workers."""
import gc
import os

import pytest
from hypothesis import settings

import secant

# Small by default so `make test` stays fast; `make test-thorough` sets HYPOTHESIS_PROFILE=thorough.
settings.register_profile("default", max_examples=25, deadline=None)
settings.register_profile("thorough", max_examples=10000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Python's cyclic collector less often (default thresholds 700, 10, 10): a worker holds every
# transform it built (syntax trees: millions of long-lived objects), which each young and full
# collection walks again. Measured (Dec 6, one process, the same 580 tests of composition_sweep,
# corpus and grad_rules, every 7th; gc.callbacks timing): collector CPU 7.4 -> 3.3 s, the
# process 55.3 -> 48.3 CPU s (machine at load ~12: the process figure is noisy). Tests that
# need garbage gone call gc.collect() themselves; memory is bounded by the thresholds.
gc.set_threshold(100_000, 50, 10)


@pytest.fixture(autouse=True, scope="module")
def _compiled_programs_per_file():
    """Each test file's compiled programs dropped when it ends (secant.clear_caches), so a
    worker's memory and live XLA executables stay those of one file: a worker of a full run
    grew to ~5 GB, and XLA's compiler crashed there twice near the end of a run."""
    yield
    secant.clear_caches()
    _frozen_after_each_file()


def _frozen_after_each_file():
    """What a file leaves alive, moved out of the cyclic collector's sight (gc.freeze) once a
    full collection has freed the file's garbage: a worker keeps every transform and test
    module it built (millions of objects), which each later full collection walked again, so
    a test's gc.collect() and the collector's own full passes cost more the later a file ran
    (test_function_cache's 10 gc.collect tests: 10-13 s each in a full `make test`). Now
    each full collection walks only the current file's objects. Garbage cycles among what an
    earlier file left alive are not freed (those objects are kept for the worker's life
    anyway: test modules, remembered transforms); `gc.unfreeze()` undoes it."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="module")
def fast_compiles():
    """XLA compiles with LLVM's optimisation off in the default profile (XLA's HLO passes run
    as always): ~40% cheaper a compile (bench/pytest_cpu.py: test_library_cases 118 -> 90 CPU s
    of compiles). For files whose checks are tolerance-based (ulps do not matter) and whose CPU
    time is mostly compiles; they take it with `pytestmark = pytest.mark.usefixtures(
    "fast_compiles")`. `make test-thorough` compiles at XLA's default level."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "thorough":
        yield
        return
    secant.config.update("backend_optimization_level", 0)
    try:
        yield
    finally:
        secant.config.update("backend_optimization_level", None)


@pytest.fixture
def x64():
    """Runs the test with 64-bit types enabled, restoring 32-bit defaults afterwards."""
    secant.config.update("enable_x64", True)
    try:
        yield
    finally:
        secant.config.update("enable_x64", False)


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64_or_not(request):
    """Runs the test twice: with 32-bit and with 64-bit types."""
    secant.config.update("enable_x64", request.param)
    try:
        yield
    finally:
        secant.config.update("enable_x64", False)


# `make test` gives whole files to its workers (pytest-xdist --dist loadfile, queued in collection
# order: --no-loadscope-reorder). Queued by test count, as xdist does by default, a file of a few
# slow tests (subprocesses: the examples, the distributed launches) starts last and keeps one
# worker busy while the other idles; queued heaviest first, the last files are the short ones.
# Seconds of each file: its CPU seconds (Dec 6, bench/pytest_cpu.py over every 4th test of each
# file, every 6th from test_others11_compositions on, one process per slice of 60 files, at
# load 6-20; scaled up by the file's test count; five files measured whole). A sample is
# rough for a file of a few slow tests (nested_loop_orders: estimated 94 s, 53 s whole): where
# one of under 30 tests came out below the previous table's figure (whole-file durations), that
# figure is kept (odeint_compositions' third derivative, the subprocess files). Files under 4 s
# are left out: 198 files, 3241 tests, 0.076 s a test, taken as PER_TEST. A stale figure
# changes only the order (the costliest files first, so that no long file starts last), never
# what runs. Dec 7 (suite19r): the files rotated then (checks.rotated/turns) set to 0.7 x
# what they measured whole after it, or lowered by 0.7 x the CPU seconds their rotated tests
# saved (measured at load ~12, where the figures above ran ~1.4x higher). Dec 7 (suite19s):
# written by `bench/pytest_cpu.py --table PREFIX` (heaviest first) from a whole-file run of
# `make test`'s command (-n 2, -p pytest_cpu, load ~16) for the files it had finished; the
# others keep their figures. Once such a run is complete, the same command gives every file.
# suite19t's eight trimmed files: that run less what their default profile no longer runs.
# The lead's run stopped at its 90-minute limit (7,668 tests, the heaviest files first): the
# files it measured have its figures, new files their own runs', the rest keep theirs.
CPU_SECONDS = {
    "test_library_cases.py": 187, "test_corpus.py": 101, "test_odeint_compositions.py": 92,
    "test_library_shapes.py": 75, "test_composition_sweep.py": 73,
    "test_others3_compositions.py": 71, "test_deep_compositions.py": 70,
    "test_nested_loop_orders.py": 68, "test_solve15_solvers.py": 62,
    "test_scan2_compositions.py": 53, "test_hess15_int_carries.py": 52,
    "test_random_programs2.py": 47, "test_perf19b_index.py": 46,
    "test_others4_compositions.py": 45, "test_others3_autograd_style.py": 40,
    "test_odeint_second_order.py": 39, "test_others5_sciml.py": 38,
    "test_explore15j_programs.py": 37, "test_others8_solvers.py": 36,
    "test_run_jax_programs.py": 36, "test_deep15r_compositions.py": 34, "test_distributed.py": 33,
    "test_explore15r_libraries.py": 32, "test_mods15d_triples.py": 31,
    "test_others5_optim_control.py": 31, "test_random_programs.py": 31,
    "test_others11_compositions.py": 30, "test_linalg_final.py": 29,
    "test_explore15k_programs.py": 27, "test_builtins15_sweep.py": 26,
    "test_explore15h_programs.py": 26, "test_others3_science.py": 26,
    "test_others5_compositions.py": 26, "test_explore15o_programs.py": 25,
    "test_others15_models.py": 24, "test_lib15c_special.py": 23, "test_limits.py": 23,
    "test_others3_numerics.py": 23, "test_others5_bayes.py": 23, "test_explore15i_programs.py": 22,
    "test_composition_orders.py": 22, "test_lib15d_ndimage.py": 22, "test_others3_examples.py": 22,
    "test_examples.py": 21, "test_linalg_lu.py": 21, "test_scatter15.py": 21,
    "test_while15b_compositions.py": 21, "test_compilation_cache.py": 20,
    "test_fuzz15b_constructs.py": 20, "test_lib15d_sparse.py": 20, "test_loop15n_loops.py": 20,
    "test_others2_second_order.py": 20, "test_random_dists.py": 20,
    "test_explore15l_programs.py": 19, "test_numerics15o_battery.py": 19,
    "test_star15_lists.py": 19, "test_vmap_index_parts.py": 19,
    "test_while15_batched_while.py": 19, "test_scipy_special.py": 18, "test_obj15k_ufuncs.py": 18,
    "test_perf19e_while_stacks.py": 18, "test_rows20s_chunks.py": 18,
    "test_bad15n_bad_inputs.py": 17,
    "test_linalg15c_schur.py": 17, "test_norm15l_unpacked_calls.py": 17,
    "test_others8_rl_attention.py": 17, "test_others9_models.py": 17,
    "test_vm15k_containers.py": 17, "test_lib15e_signal.py": 16, "test_linalg15c_more.py": 16,
    "test_others15_pytrees.py": 16, "test_pmap.py": 16, "test_sweep15_helpers.py": 16,
    "test_batch15u_nested.py": 18, "test_effects16_compositions.py": 15,
    "test_grad_rules.py": 15, "test_left15k_programs.py": 15,
    "test_lib15c_stats.py": 15, "test_others15_cookbook.py": 15, "test_others7_science.py": 15,
    "test_others8_idioms_science.py": 15, "test_state15o_counters.py": 15,
    "test_control_flow_compositions.py": 14, "test_effects15b_sweep.py": 14,
    "test_error_catalogue.py": 14, "test_hstack15m_lists.py": 14, "test_nondet20_sources.py": 14,
    "test_others5_physics_finance.py": 14, "test_others6_generative.py": 14, "test_random.py": 14,
    "test_rows20r_loops.py": 14, "test_structural_primitives.py": 14, "test_deep15s_fixes.py": 14,
    "test_deep15t_fixes.py": 26, "test_gaps15t_compositions.py": 21,
    "test_eager19t_fast_paths.py": 12, "test_speed19t_passes.py": 5, "test_dtype_flow.py": 13,
    "test_eager19v_helpers.py": 5, "test_eager19v_dispatch.py": 4, "test_cholesky_complex_grads.py": 9,
    "test_lead15v_dtypes.py": 6, "test_speed19v_walks.py": 5, "test_sem15v_semantics.py": 14,
    "test_reduce15w_masks.py": 7, "test_linalg15w_complex.py": 7, "test_complex15w_order.py": 7,
    "test_lean20r_reversed.py": 13, "test_lib15c_fft.py": 13, "test_others10_tensors_ml.py": 13,
    "test_others2_optimizers.py": 13, "test_others7_numerics.py": 13, "test_vmap.py": 13,
    "test_api18_implicit.py": 12, "test_carry15l_carries.py": 12, "test_explore15h_fixes.py": 12,
    "test_fixnorm_library_jvps.py": 12, "test_lean20w.py": 12, "test_lib15.py": 12,
    "test_mods15_aux_constructor.py": 12, "test_order15_computed_names.py": 12,
    "test_others5_linalg.py": 12, "test_others8_graphs_flows.py": 12,
    "test_scipy_nn_final.py": 12, "test_silent15r_fuzz.py": 12, "test_xfail15f.py": 12,
    "test_cache19_key.py": 11, "test_fft15r_shapes.py": 11, "test_fields15_compositions.py": 11,
    "test_grad_api.py": 11, "test_lean20v.py": 11, "test_lib15d_more_api.py": 11,
    "test_loops16.py": 11, "test_others4_graphs_rl.py": 11, "test_others6_sparse_scan.py": 11,
    "test_runtime16_dispatch.py": 11, "test_sweep3a_loops.py": 11,
    "test_thorough15_compositions.py": 11, "test_appends_higher_order.py": 10,
    "test_dist21_failures.py": 10, "test_gaps15d_objects.py": 10, "test_lean20y_reversed.py": 10,
    "test_names17.py": 10, "test_norm15o_outputs.py": 10, "test_objects15e_computed.py": 10,
    "test_others2_api.py": 10, "test_others3_more.py": 10, "test_others4_pystyle.py": 10,
    "test_others6_classes.py": 10, "test_pop15_refusals.py": 10, "test_threads.py": 10,
    "test_effects19_trip_count.py": 9, "test_fft15_gather_modes.py": 9,
    "test_jacobians_nested.py": 9, "test_lean20g_headers.py": 9, "test_lib15d_lu.py": 9,
    "test_others10_science.py": 9, "test_others2_stats_linalg.py": 9, "test_stax_optimizers.py": 9,
    "test_duals15m_programs.py": 8, "test_elementwise.py": 8, "test_function_cache.py": 8,
    "test_inplace_callees.py": 8, "test_lax.py": 8, "test_lax_more.py": 8, "test_lean20x.py": 8,
    "test_lib15c_lax.py": 8, "test_numpy_reductions.py": 8, "test_others10_compositions.py": 8,
    "test_others2_modules.py": 8, "test_others6_compositions.py": 8,
    "test_others6_special_random.py": 8, "test_perf19s.py": 8, "test_pytree15_operators.py": 8,
    "test_sci15_odeint.py": 8, "test_staged_static_tests.py": 8, "test_star15_calls.py": 8,
    "test_catalogue_fixes.py": 7, "test_indexing.py": 7, "test_lean20o_reductions.py": 7,
    "test_lib15e_image.py": 7, "test_lib15e_nn.py": 7, "test_ops15b_effects.py": 7,
    "test_ops15b_operators.py": 7, "test_others10_modules.py": 7,
    "test_others9_compositions.py": 7, "test_perf19d_prune.py": 7, "test_refuse15_idioms.py": 7,
    "test_scipy_linalg_api.py": 7, "test_star15_unpack.py": 7, "test_state15l_zip.py": 7,
    "test_sweep_compositions.py": 7, "test_carry15l_collectives.py": 6,
    "test_containers_values.py": 6, "test_explore15_docs.py": 6,
    "test_items15n_object_list_items.py": 6, "test_jvp.py": 6, "test_lean20g_names.py": 6,
    "test_lib15e_spatial.py": 6, "test_misc15_idioms.py": 6, "test_obj15k_factory.py": 6,
    "test_others4_libraries.py": 6, "test_others4_losses.py": 6, "test_others4_transformers.py": 6,
    "test_others5_graphics_signal.py": 6, "test_others9_classroom.py": 6,
    "test_others9_science.py": 6, "test_plain_objects15.py": 6, "test_python_syntax.py": 6,
    "test_scipy_stats.py": 6, "test_stale15_first_call.py": 6, "test_tape15n_programs.py": 6,
    "test_zip15_partials.py": 6, "test_state15s_depth.py": 6, "test_ctx15_function_fields.py": 5,
    "test_dist21_gpu_fallback.py": 5, "test_eager_memory.py": 5, "test_effects15_modules.py": 5,
    "test_effects19_state.py": 5, "test_functions_as_values.py": 5, "test_lean20g.py": 5,
    "test_lean20g_rows.py": 5, "test_lean20z_softmax.py": 5, "test_leftovers15.py": 5,
    "test_lib15d_numpy.py": 5, "test_lib15e_numpy.py": 5, "test_library_rules_higher_order.py": 5,
    "test_linalg_spectral.py": 5, "test_loop_saving.py": 5, "test_obj15k_collectives.py": 5,
    "test_others11_sim.py": 5, "test_special_expint.py": 5, "test_verlet21_static_ifs.py": 5,
    "test_attr15_unreached.py": 4, "test_axes15_lr_closures.py": 4,
    "test_fft15_unbatched_primal.py": 4, "test_frozen15m_mappings.py": 4,
    "test_hstack15m_recursion.py": 4, "test_lax_loops_second_order.py": 4,
    "test_lead16_numpy_buffers.py": 4, "test_lean20h.py": 4, "test_lean20u.py": 4,
    "test_lean20z_transpose.py": 4, "test_left15a_idioms.py": 4, "test_lib15d_interpolate.py": 4,
    "test_lib15e_api.py": 4, "test_list_params_compositions.py": 4, "test_mod15_followed.py": 4,
    "test_mod15_getattr.py": 4, "test_numpy_products.py": 4, "test_obj15l_stateful_getters.py": 4,
    "test_others2_control.py": 4, "test_others4_idioms.py": 4, "test_others6_ot_kernels_ode.py": 4,
    "test_others7_modules.py": 4, "test_others7_optax.py": 4, "test_perf19h_dispatch.py": 4,
    "test_state15l_callees.py": 4, "test_traced_globals15.py": 4, "test_attr15_getattr.py": 3,
    "test_effects15b_rebound.py": 3, "test_items15n_named_call.py": 3, "test_lean20o_trace.py": 3,
    "test_lean20o_unbroadcasts.py": 3, "test_lean20z_seed.py": 3, "test_lean20z_wrap.py": 3,
    "test_lib15d_tree_strict.py": 3, "test_lib15e_lax.py": 3, "test_lib15e_random.py": 3,
    "test_mod15_rebound.py": 3, "test_obj15k_state.py": 3, "test_objects15e_closures.py": 3,
    "test_perf19b_passes.py": 3, "test_perf19h_transform.py": 3, "test_shape20o_rows.py": 3,
    "test_speed19f_once.py": 3, "test_state15l_log.py": 3, "test_suite19d_pullbacks.py": 3,
    "test_zip15_transpose.py": 3, "test_fixobj_context_calls.py": 2, "test_gaps15d_idioms.py": 2,
    "test_items15n_effect_calls.py": 2, "test_objects15e_sweep.py": 2, "test_perf19c_shapes.py": 2,
    "test_perf19d_dispatch.py": 2, "test_shape20o_queries.py": 2, "test_speed19s_scans.py": 2,
    "test_lead16_type_tests.py": 1, "test_lead17_code_cache.py": 1, "test_nondet20_ids.py": 1,
    "test_perf19c_reshape.py": 1, "test_reland15_cotangent_kinds.py": 1,
}
PER_TEST = 0.08


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return          # (one process: files in their usual order)
    first, count = {}, {}
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
        count[item.path] = count.get(item.path, 0) + 1

    def cost(path):
        return CPU_SECONDS.get(path.name, PER_TEST * count[path])

    # (stable: each file's tests keep their order, so module-level random draws are unchanged)
    items.sort(key=lambda item: (-cost(item.path), first[item.path]))
