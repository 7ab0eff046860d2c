// Feature modules that register pages or header actions on import. Add one line per module.
import "./pages/all";
import "./capture/capture_dialog";
import "./trace_viewer/page";
