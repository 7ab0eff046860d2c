// The standalone page's start (a file, not an inline script: `tbprof serve` sends a
// Content-Security-Policy without 'unsafe-inline' for scripts). A module script runs after
// the document is parsed, so document.body exists.
import { render } from "./index.js";

render();
