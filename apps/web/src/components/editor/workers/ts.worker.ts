// Monaco's TypeScript language service worker (process.custom code: completions, type errors), bundled by Next.
import "monaco-editor/esm/vs/language/typescript/ts.worker.js";
