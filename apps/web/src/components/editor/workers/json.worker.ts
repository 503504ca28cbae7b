// Monaco's JSON language service worker (validation, folding, formatting), bundled by Next.
import "monaco-editor/esm/vs/language/json/json.worker.js";
