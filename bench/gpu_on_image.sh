#!/bin/sh
# Issue 21: run the GPU check on a machine whose image already holds jaxlib and a CUDA PJRT
# plugin (jax-cuda12/13-pjrt) but no secant and no network. Here, first:
#     .venv/bin/pip download --no-deps --only-binary=:all: --python-version 3.12 \
#         --implementation cp --platform manylinux2014_x86_64 -d .whl gast==0.7.0
#     .venv/bin/pip wheel --no-deps . -w .whl
# then, on that machine, from the repository root (with .whl carried along):
#     sh bench/gpu_on_image.sh OUTDIR
# It installs the two wheels beside the image's packages, prints what it found, runs
# bench/gpu_check.py, and runs a few test files on the GPU (tests copied out of the checkout, so
# that the installed package, not the source folders, is imported).
set -u
out=${1:-/tmp}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import jaxlib, numpy; print('jaxlib', jaxlib.__version__, 'numpy', numpy.__version__)"
(cd /tmp && python3 -c "import secant; from secant.backends import runtime; \
print('plugin', runtime.gpu_plugin_path()); print(secant.devices(), secant.default_backend())")
timeout 330 python3 bench/gpu_check.py 2>&1 | tee "$out/gpu_check.log"
rm -rf /tmp/t && mkdir /tmp/t && cp -r tests /tmp/t/ && cd /tmp/t && \
    SECANT_PLATFORMS=gpu timeout 150 python3 -m pytest -q -p no:cacheprovider \
    tests/test_jit_api.py tests/test_grad_api.py tests/test_lax.py 2>&1 | tail -8
