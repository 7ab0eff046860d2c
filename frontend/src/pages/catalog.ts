// For the "no data" page: what each tool needs in a profile and how to record it. The order
// and titles of the tools come from the backend (service/tools.py, the `tools` and `settings`
// routes); tool names are XProf's, so users moving over recognise them.

export interface ToolFacts {
  name: string;
  /** What the profile must contain for this tool to have data. */
  needs: string;
  /** How to record a profile that has it. */
  howTo: string[];
}

const STEP_HOWTO = [
  "TensorFlow: wrap each training step in tf.profiler.experimental.Trace('train', step_num=step, _r=1).",
  "JAX: wrap each step in jax.profiler.StepTraceAnnotation('train', step_num=step).",
  "Keras 3's model.fit writes no step markers; XProf reports \"No step time measured\" for such runs too.",
];

// PyTorch: torch.profiler.profile's arguments that decide what a trace holds.
const TORCH_TRACE = "PyTorch: record with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
  + "schedule=torch.profiler.schedule(wait=1, warmup=1, active=3), on_trace_ready=torch.profiler.tensorboard_trace_handler(LOGDIR)) "
  + "and call prof.step() after each step (that writes the ProfilerStep#N events).";
const TORCH_RANKS = "Distributed: profile every rank (each writes its own rank<N>.*.pt.trace.json) into the same folder.";

export const TOOL_FACTS: readonly ToolFacts[] = [
  {
    name: "module_view",
    needs: "PyTorch module events: the nn.Module hierarchy that Kineto writes only when the trace is recorded with with_modules=True.",
    howTo: [
      "Add with_modules=True to torch.profiler.profile(...) (TorchScript and eager nn.Modules are both recorded).",
      TORCH_TRACE,
    ],
  },
  {
    name: "operators_by_shape",
    needs: "PyTorch operators with their input shapes (record_shapes=True) and, for the call stack view, Python stacks (with_stack=True).",
    howTo: ["Add record_shapes=True and with_stack=True to torch.profiler.profile(...).", TORCH_TRACE],
  },
  {
    name: "gpu_breakdown",
    needs: "GPU kernels, memory copies and sets on device streams (a CUDA or ROCm trace).",
    howTo: [TORCH_TRACE, "JAX/TensorFlow on a GPU: any jax.profiler or tf.profiler trace has the kernels."],
  },
  {
    name: "gpu_counters",
    needs: "GPU kernels and memory copies with their launch (runtime) events, to count the queue per stream and the bytes per second.",
    howTo: [TORCH_TRACE],
  },
  {
    name: "kernel_sequences",
    needs: "PyTorch operators (aten::) and the kernels they launch, linked by correlation ids.",
    howTo: [TORCH_TRACE],
  },
  {
    name: "gpu_utilization",
    needs: "GPU kernels with their launch configuration (blocks, warps per SM, occupancy), as Kineto writes them.",
    howTo: [TORCH_TRACE],
  },
  {
    name: "collectives",
    needs: "two or more ranks with NCCL collective kernels and PyTorch's distributedInfo.",
    howTo: [TORCH_TRACE, TORCH_RANKS],
  },
  {
    name: "stragglers",
    needs: "two or more ranks with ProfilerStep iterations and NCCL collective kernels.",
    howTo: [TORCH_TRACE, TORCH_RANKS],
  },
  {
    name: "critical_path",
    needs: "a PyTorch trace with operators, kernels and their links (correlation ids) inside an annotation such as ProfilerStep#N.",
    howTo: [TORCH_TRACE],
  },
  {
    name: "overview_page",
    needs: "step markers (a step-annotated training loop) and the ops that ran in each step.",
    howTo: STEP_HOWTO,
  },
  {
    name: "input_pipeline_analyzer",
    needs: "step markers and the host-side input ops (tf.data iterator events) of each step.",
    howTo: [
      ...STEP_HOWTO,
      "Record host events: tf.profiler.experimental.ProfilerOptions(host_tracer_level=2) or higher.",
    ],
  },
  {
    name: "framework_op_stats",
    needs: "TensorFlow or XLA op events on the host or a device.",
    howTo: ["Profile while ops execute (not only while Python runs): e.g. a few training steps after warm-up."],
  },
  {
    name: "kernel_stats",
    needs: "GPU kernel launches (a /device:GPU:N plane with kernel events).",
    howTo: [
      "Profile on a machine with a GPU and the CUDA profiling library (CUPTI) available.",
      "CPU-only runs have no kernels: use TensorFlow stats or the trace viewer instead.",
    ],
  },
  {
    name: "memory_profile",
    needs: "allocator events (MemoryAllocation / MemoryDeallocation) on the host plane.",
    howTo: [
      "TensorFlow records them with host_tracer_level=2 or higher (ProfilerOptions).",
    ],
  },
  {
    name: "pod_viewer",
    needs: "step markers on several devices or hosts, to compare their steps side by side.",
    howTo: STEP_HOWTO,
  },
  {
    name: "tf_data_bottleneck_analysis",
    needs: "tf.data iterator events (Iterator::… on the host), written when the input is a tf.data.Dataset.",
    howTo: [
      "Feed the model from a tf.data.Dataset and record host events (host_tracer_level=2 or higher).",
    ],
  },
  {
    name: "op_profile",
    needs: "device or host op events with their categories (XLA or TensorFlow ops).",
    howTo: ["Profile a few steps of the compiled model after warm-up."],
  },
  {
    name: "trace_viewer",
    needs: "any timed events.",
    howTo: ["Any profiler output with events opens here."],
  },
  {
    name: "hlo_stats",
    needs: "XLA device ops: a /device:GPU or /device:TPU plane whose events name HLO ops, and the HLO protos of their programs.",
    howTo: ["Profile JAX, or TensorFlow with XLA (jit_compile=True), on a GPU or TPU."],
  },
  {
    name: "roofline_model",
    needs: "XLA device ops and the device's peaks (the GPU plane's clock, SM count and memory bandwidth stats).",
    howTo: ["Profile JAX, or TensorFlow with XLA, on a GPU or TPU."],
  },
  {
    name: "memory_viewer",
    needs: "the HLO protos of XLA programs with their buffer assignment (written on the /host:metadata plane).",
    howTo: ["Profile JAX, or TensorFlow with XLA; each compiled program's buffer assignment comes with the profile."],
  },
  {
    name: "graph_viewer",
    needs: "the HLO protos of XLA programs (the /host:metadata plane).",
    howTo: ["Profile JAX, or TensorFlow with XLA. Open it from an HLO op in HLO op stats to centre it on that op."],
  },
  {
    name: "smart_suggestion",
    needs: "any XSpace profile: the rules read the overview, kernel stats, memory profile and HLO op stats.",
    howTo: ["Any TensorFlow or JAX profile."],
  },
  {
    name: "inference_profile",
    needs: "inference request markers: host events with a request_id stat (TensorFlow Serving and XLA inference runtimes write them per request).",
    howTo: ["Profile the serving process while it answers requests (e.g. TensorFlow Serving's profiler endpoint)."],
  },
  {
    name: "megascale_stats",
    needs: "a TPU profile: it reads the Megascale (multi-slice DCN) collective events, which only TPU planes (/device:TPU:N) carry (XProf shows it for TPU runs only).",
    howTo: ["Profile the program on a Cloud TPU VM (jax.profiler or tf.profiler); GPU and CPU profiles never have these counters."],
  },
  {
    name: "perf_counters",
    needs: "a TPU profile: it reads TPU hardware performance counters, which only TPU planes (/device:TPU:N) carry (XProf shows it for TPU runs only).",
    howTo: ["Profile the program on a Cloud TPU VM (jax.profiler or tf.profiler); GPU and CPU profiles never have these counters."],
  },
  {
    name: "utilization_viewer",
    needs: "a TPU profile: it reads TPU core unit utilization counters, which only TPU planes (/device:TPU:N) carry (XProf shows it for TPU runs only).",
    howTo: ["Profile the program on a Cloud TPU VM (jax.profiler or tf.profiler); GPU and CPU profiles never have these counters."],
  },
  {
    name: "kernel_utilization",
    needs: "a TPU profile: it reads TPU kernel (SparseCore/TensorCore) utilization, which only TPU planes (/device:TPU:N) carry (XProf shows it for TPU runs only).",
    howTo: ["Profile the program on a Cloud TPU VM (jax.profiler or tf.profiler); GPU and CPU profiles never have these counters."],
  },
  {
    name: "tfprof_views",
    needs: "a tfprof ProfileProto (Profiler.serialize_to_string() / ProfileContext dump).",
    howTo: ["Write one with tf.compat.v1.profiler.Profiler(...).serialize_to_string()."],
  },
  {
    name: "compare",
    needs: "two profiles (runs or hosts) to put side by side; steps for the step-time comparison.",
    howTo: [
      "Choose the candidate in the Run and Host selectors and the baseline on the page.",
      "From a terminal: tbprof compare BASELINE CANDIDATE, or tbprof check ... --max-regression 5% in CI.",
    ],
  },
  {
    name: "profile_summary",
    needs: "a readable profile file.",
    howTo: ["Any XSpace (*.xplane.pb) or Chrome trace file opens here."],
  },
];

export function toolFacts(name: string): ToolFacts | undefined {
  return TOOL_FACTS.find((t) => t.name === name);
}
