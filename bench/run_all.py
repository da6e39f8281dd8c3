"""Runs every benchmark in one process: `make bench` or `.venv/bin/python bench/run_all.py`."""
import checkpoint
import control_flow
import dispatch
import eager
import grad
import jacobians
import mlp
import pmap
import prng
import vmap

if __name__ == "__main__":
    for bench in (dispatch, mlp, eager, grad, control_flow, jacobians, prng, vmap, pmap, checkpoint):
        bench.main()
        print()
