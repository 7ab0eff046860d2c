// The frontend's registries, as explicit lists (as the backend's are): nothing registers itself
// on import. PAGES maps a tool id to the page that draws it; each entry is typed by its tool's
// result (schema.gen.ts ToolResults, generated from the backend's TypedDicts), so a page listed
// under the wrong tool, or one that reads a field its tool does not send, fails tsc. The order
// and titles of the tool list come from the backend (the `tools` and `settings` routes).

import { captureAction } from "./capture/capture_dialog";
import type { FrameworkOpStatsResult, ToolId, ToolResults, TraceViewerResult } from "./data/schema.gen";
import { comparePage } from "./pages/compare/compare_page";
import { criticalPathPage } from "./pages/critical_path/critical_path_page";
import { gpuCountersPage } from "./pages/gpu_counters/gpu_counters_page";
import { gpuBreakdownPage } from "./pages/gpu_breakdown/gpu_breakdown_page";
import { graphViewerPage } from "./pages/graph_viewer/graph_viewer_page";
import { hloStatsPage } from "./pages/hlo_stats/hlo_stats_page";
import { inputPipelinePage } from "./pages/input_pipeline/input_pipeline_page";
import { kernelStatsPage } from "./pages/kernel_stats/kernel_stats_page";
import { memoryProfilePage } from "./pages/memory_profile/memory_profile_page";
import { memoryViewerPage } from "./pages/memory_viewer/memory_viewer_page";
import { opProfilePage } from "./pages/op_profile/op_profile_page";
import { overviewPage } from "./pages/overview/overview_page";
import { podViewerPage } from "./pages/pod_viewer/pod_viewer_page";
import { profileSummaryPage } from "./pages/profile_summary/profile_summary_page";
import { queryPage } from "./pages/query/query_page";
import type { PageSpec } from "./pages/registry";
import { rooflineModelPage } from "./pages/roofline_model/roofline_model_page";
import { smartSuggestionPage } from "./pages/smart_suggestion/smart_suggestion_page";
import { stragglersPage } from "./pages/stragglers/stragglers_page";
import { tfDataPage } from "./pages/tf_data/tf_data_page";
import { tfStatsPage } from "./pages/tf_stats/tf_stats_page";
import type { HeaderAction } from "./shell/actions";
import { traceViewerPage } from "./trace_viewer/page";

/** A page per tool id, typed by that tool's result; tools without one get the generic page. */
type ToolPages = { readonly [K in ToolId]?: PageSpec<ToolResults[K]> };

/** Pages under names that are no tool's id: XProf's aliases, and pages of no backend tool. */
interface OtherPages {
  readonly "trace_viewer@": PageSpec<TraceViewerResult>;
  readonly tensorflow_stats: PageSpec<FrameworkOpStatsResult>;
  /** Two runs side by side through its own routes: listed for every run (everyRun). */
  readonly compare: PageSpec;
  /** SQL over the run through its own route (docs/sql.md): listed for every run (everyRun). */
  readonly query: PageSpec;
}

export const PAGES: ToolPages & OtherPages = {
  profile_summary: profileSummaryPage,
  overview_page: overviewPage,
  input_pipeline_analyzer: inputPipelinePage,
  framework_op_stats: tfStatsPage,
  tensorflow_stats: tfStatsPage,
  kernel_stats: kernelStatsPage,
  memory_profile: memoryProfilePage,
  pod_viewer: podViewerPage,
  tf_data_bottleneck_analysis: tfDataPage,
  op_profile: opProfilePage,
  trace_viewer: traceViewerPage,
  "trace_viewer@": traceViewerPage,
  hlo_stats: hloStatsPage,
  roofline_model: rooflineModelPage,
  memory_viewer: memoryViewerPage,
  graph_viewer: graphViewerPage,
  smart_suggestion: smartSuggestionPage,
  gpu_breakdown: gpuBreakdownPage,
  critical_path: criticalPathPage,
  stragglers: stragglersPage,
  gpu_counters: gpuCountersPage,
  compare: comparePage,
  query: queryPage,
};

/** The buttons in the shell's header. */
export const HEADER_ACTIONS: readonly HeaderAction[] = [captureAction];

const byName: ReadonlyMap<string, PageSpec> = new Map<string, PageSpec>(Object.entries(PAGES));

/**
 * The page of a tool, or undefined (the shell then draws the generic page). The shell holds the
 * JSON of whichever tool the URL names: PAGES above is where each page meets its tool's type.
 */
export function pageFor(tool: string): PageSpec | undefined {
  return byName.get(tool);
}

/** Pages the shell lists for every run (see PageSpec.everyRun), in PAGES order. */
export function everyRunTools(): string[] {
  return [...byName.entries()].filter(([, spec]) => spec.everyRun === true).map(([tool]) => tool);
}
