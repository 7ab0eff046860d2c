// What the frontend knows about tools before asking the backend: the order of the tool
// list, fallback titles, and — for the "no data" page — what each tool needs in a profile
// and how to record it. Tool names are XProf's, so users moving over recognise them.

export interface ToolFacts {
  name: string;
  title: string;
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

export const TOOL_FACTS: readonly ToolFacts[] = [
  {
    name: "overview_page",
    title: "Overview",
    needs: "step markers (a step-annotated training loop) and the ops that ran in each step.",
    howTo: STEP_HOWTO,
  },
  {
    name: "input_pipeline_analyzer",
    title: "Input pipeline",
    needs: "step markers and the host-side input ops (tf.data iterator events) of each step.",
    howTo: [
      ...STEP_HOWTO,
      "Record host events: tf.profiler.experimental.ProfilerOptions(host_tracer_level=2) or higher.",
    ],
  },
  {
    name: "framework_op_stats",
    title: "TensorFlow stats",
    needs: "TensorFlow or XLA op events on the host or a device.",
    howTo: ["Profile while ops execute (not only while Python runs): e.g. a few training steps after warm-up."],
  },
  {
    name: "kernel_stats",
    title: "Kernel stats",
    needs: "GPU kernel launches (a /device:GPU:N plane with kernel events).",
    howTo: [
      "Profile on a machine with a GPU and the CUDA profiling library (CUPTI) available.",
      "CPU-only runs have no kernels: use TensorFlow stats or the trace viewer instead.",
    ],
  },
  {
    name: "memory_profile",
    title: "Memory profile",
    needs: "allocator events (MemoryAllocation / MemoryDeallocation) on the host plane.",
    howTo: [
      "TensorFlow records them with host_tracer_level=2 or higher (ProfilerOptions).",
    ],
  },
  {
    name: "pod_viewer",
    title: "Pod viewer",
    needs: "step markers on several devices or hosts, to compare their steps side by side.",
    howTo: STEP_HOWTO,
  },
  {
    name: "tf_data_bottleneck_analysis",
    title: "tf.data bottleneck analysis",
    needs: "tf.data iterator events (Iterator::… on the host), written when the input is a tf.data.Dataset.",
    howTo: [
      "Feed the model from a tf.data.Dataset and record host events (host_tracer_level=2 or higher).",
    ],
  },
  {
    name: "op_profile",
    title: "Op profile",
    needs: "device or host op events with their categories (XLA or TensorFlow ops).",
    howTo: ["Profile a few steps of the compiled model after warm-up."],
  },
  {
    name: "trace_viewer",
    title: "Trace viewer",
    needs: "any timed events.",
    howTo: ["Any profiler output with events opens here."],
  },
  {
    name: "tfprof_views",
    title: "tfprof views",
    needs: "a tfprof ProfileProto (Profiler.serialize_to_string() / ProfileContext dump).",
    howTo: ["Write one with tf.compat.v1.profiler.Profiler(...).serialize_to_string()."],
  },
  {
    name: "compare",
    title: "Compare",
    needs: "two profiles (runs or hosts) to put side by side; steps for the step-time comparison.",
    howTo: [
      "Choose the candidate in the Run and Host selectors and the baseline on the page.",
      "From a terminal: tbprof compare BASELINE CANDIDATE, or tbprof check ... --max-regression 5% in CI.",
    ],
  },
  {
    name: "profile_summary",
    title: "Profile summary",
    needs: "a readable profile file.",
    howTo: ["Any XSpace (*.xplane.pb) or Chrome trace file opens here."],
  },
];

const ORDER = TOOL_FACTS.map((t) => t.name);

export function toolFacts(name: string): ToolFacts | undefined {
  return TOOL_FACTS.find((t) => t.name === name);
}

/** Tools in the order of the tool list: known tools first (catalog order), others by name. */
export function sortTools(names: readonly string[]): string[] {
  const rank = (n: string): number => {
    const i = ORDER.indexOf(n);
    return i < 0 ? ORDER.length : i;
  };
  return [...names].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The tool a run opens on when the URL names none: the first of the list. */
export function defaultTool(names: readonly string[]): string | null {
  return sortTools(names)[0] ?? null;
}
