"""A small TensorFlow training loop that serves the profiler on a port (test subject).

    python tf_training_server.py PORT [--idle]

Prints ``READY <port>`` once the profiler server listens and the first step ran, then
trains a tiny Keras-free model forever (``--idle``: serves the profiler but runs nothing,
so a capture with every tracer off collects no events). The parent test kills it.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The test checks op names: with oneDNN's graph rewrites (on by default on x86 CPUs that have
# AVX-512/AMX) the MatMuls become "add:_MklNativeFusedMatMul" and "...:_MklMatMul", depending
# on the machine. Plain TensorFlow kernels name them the same everywhere.
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import tensorflow as tf


def main() -> None:
    port = int(sys.argv[1])
    idle = "--idle" in sys.argv[2:]
    tf.profiler.experimental.server.start(port)
    w = tf.Variable(tf.random.normal([64, 10], seed=1), name="w")
    b = tf.Variable(tf.zeros([10]), name="b")
    opt = tf.keras.optimizers.SGD(0.01)
    x = tf.random.normal([256, 64], seed=2)
    y = tf.one_hot(tf.random.uniform([256], 0, 10, dtype=tf.int32, seed=3), 10)

    @tf.function
    def train_step() -> tf.Tensor:
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, w) + b
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b], strict=True))
        return loss

    train_step()
    print(f"READY {port}", flush=True)
    step = 0
    while True:
        if idle:
            time.sleep(0.05)
            continue
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            train_step()
        step += 1
        time.sleep(0.002)


if __name__ == "__main__":
    main()
