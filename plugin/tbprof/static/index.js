export function render() { document.body.textContent = "tbprof (frontend not built yet)"; }
