"""A small JAX loop that serves the profiler on a port (test subject; needs jax).

    python jax_training_server.py PORT

Prints ``READY <port>`` once the server listens and the first step ran.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp


def main() -> None:
    port = int(sys.argv[1])
    jax.profiler.start_server(port)
    key = jax.random.PRNGKey(0)
    w = jax.random.normal(key, (64, 10))
    x = jax.random.normal(key, (256, 64))

    @jax.jit
    def step(w: jax.Array) -> jax.Array:
        loss_grad = jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)
        return w - 0.01 * loss_grad

    w = step(w).block_until_ready()
    print(f"READY {port}", flush=True)
    i = 0
    while True:
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            w = step(w).block_until_ready()
        i += 1
        time.sleep(0.002)


if __name__ == "__main__":
    main()
