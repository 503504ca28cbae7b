// Monaco from the local `monaco-editor` package, never from a CDN: @monaco-editor/react's loader
// would otherwise fetch it from jsdelivr, and offline the editor would never appear.
// Browser-only: imported from a next/dynamic ssr:false component. Workers are small local entry
// files (./workers) that Next bundles as worker chunks (`new Worker(new URL(..., import.meta.url))`).
import { loader } from "@monaco-editor/react";
import * as monaco from "monaco-editor";

globalThis.MonacoEnvironment ??= {
  getWorker(_workerId: string, label: string): Worker {
    switch (label) {
      case "json":
        return new Worker(new URL("./workers/json.worker.ts", import.meta.url), { type: "module", name: label });
      case "typescript":
      case "javascript":
        return new Worker(new URL("./workers/ts.worker.ts", import.meta.url), { type: "module", name: label });
      default:
        return new Worker(new URL("./workers/editor.worker.ts", import.meta.url), { type: "module", name: label });
    }
  },
};

loader.config({ monaco });

// Monaco rejects its pending worker requests with a CancellationError when an editor or model is
// disposed (a page left while the JSON or TypeScript service is still answering); its own handler
// ignores these, but a promise nobody awaits any more surfaces them as unhandled rejections
// (microsoft/monaco-editor#2382). They mean "no longer wanted", never a fault: keep them out of the
// console and the page's errors, and let every other rejection through. The test is Monaco's own
// `isCancellationError` (vs/base/common/errors), restated because that module is not public API.
const MONACO_CANCELED = "Canceled";
window.addEventListener("unhandledrejection", (event) => {
  const reason: unknown = event.reason;
  if (reason instanceof Error && reason.name === MONACO_CANCELED && reason.message === MONACO_CANCELED) event.preventDefault();
});

/** Monaco in the app's colours (globals.css: --kf-surface, --kf-surface-2, --kf-text-faint). */
export const KEYFLOW_THEME = "keyflow-dark";
monaco.editor.defineTheme(KEYFLOW_THEME, {
  base: "vs-dark",
  inherit: true,
  // Token colours of the CEL expression language (components/expression/cel-language.ts).
  rules: [
    { token: "variable.cel", foreground: "7dd3fc" },
    { token: "variable.member.cel", foreground: "a5b4fc" },
    { token: "keyword.cel", foreground: "c084fc" },
    { token: "predefined.cel", foreground: "fbbf24" },
    { token: "identifier.function.cel", foreground: "fde68a" },
    { token: "operator.cel", foreground: "f472b6" },
    { token: "string.cel", foreground: "86efac" },
    { token: "string.quote.cel", foreground: "86efac" },
    { token: "string.escape.cel", foreground: "5eead4" },
    { token: "number.cel", foreground: "fdba74" },
    { token: "number.float.cel", foreground: "fdba74" },
    { token: "number.hex.cel", foreground: "fdba74" },
    { token: "comment.cel", foreground: "64748b", fontStyle: "italic" },
    { token: "invalid.cel", foreground: "f87171", fontStyle: "underline" },
  ],
  colors: {
    "editor.background": "#111723",
    "editorGutter.background": "#111723",
    "editor.lineHighlightBackground": "#161e2d",
    "editorLineNumber.foreground": "#4b5670",
    "editorLineNumber.activeForeground": "#9aa6bd",
    "scrollbarSlider.background": "#33405a80",
  },
});

export { monaco };
