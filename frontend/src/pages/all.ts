// Every dedicated page registers itself on import. One line per page; tools without one get
// the generic page.
import "./profile_summary/profile_summary_page";
import "./overview/overview_page";
import "./input_pipeline/input_pipeline_page";
import "./tf_stats/tf_stats_page";
import "./kernel_stats/kernel_stats_page";
import "./memory_profile/memory_profile_page";
import "./pod_viewer/pod_viewer_page";
import "./tf_data/tf_data_page";
import "./op_profile/op_profile_page";
import "./compare/compare_page";
import "./hlo_stats/hlo_stats_page";
import "./roofline_model/roofline_model_page";
import "./memory_viewer/memory_viewer_page";
import "./graph_viewer/graph_viewer_page";
import "./smart_suggestion/smart_suggestion_page";
import "./gpu_breakdown/gpu_breakdown_page";
import "./critical_path/critical_path_page";
