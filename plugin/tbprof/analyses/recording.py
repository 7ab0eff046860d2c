"""How to record a profile that has what a tool needs: the sentences several tools' help
(``Tool.how_to``) share, shown on a page's "no data" message."""

from __future__ import annotations

STEP_MARKERS: tuple[str, ...] = (
    "TensorFlow: wrap each training step in tf.profiler.experimental.Trace('train', step_num=step, _r=1).",
    "JAX: wrap each step in jax.profiler.StepTraceAnnotation('train', step_num=step).",
    "Keras 3's model.fit writes no step markers; XProf reports \"No step time measured\" for such runs too.",
)

# torch.profiler.profile's arguments that decide what a trace holds.
TORCH_TRACE = ("PyTorch: record with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
               "schedule=torch.profiler.schedule(wait=1, warmup=1, active=3), "
               "on_trace_ready=torch.profiler.tensorboard_trace_handler(LOGDIR)) "
               "and call prof.step() after each step (that writes the ProfilerStep#N events).")
TORCH_RANKS = "Distributed: profile every rank (each writes its own rank<N>.*.pt.trace.json) into the same folder."

XLA = "Profile JAX, or TensorFlow with XLA (jit_compile=True), on a GPU or TPU."
TPU = ("Profile the program on a Cloud TPU VM (jax.profiler or tf.profiler); GPU and CPU profiles never have "
       "these counters.")
HOST_EVENTS = "Record host events: tf.profiler.experimental.ProfilerOptions(host_tracer_level=2) or higher."
TF1_TIMELINE = ("TF1: run a step with tf.compat.v1.RunOptions(trace_level=FULL_TRACE) and write "
                "timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format(show_memory=True), or use "
                "tf.estimator.ProfilerHook.")
