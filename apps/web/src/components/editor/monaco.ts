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
      default:
        return new Worker(new URL("./workers/editor.worker.ts", import.meta.url), { type: "module", name: label });
    }
  },
};

loader.config({ monaco });

/** Monaco in the app's colours (globals.css: --kf-surface, --kf-surface-2, --kf-text-faint). */
export const KEYFLOW_THEME = "keyflow-dark";
monaco.editor.defineTheme(KEYFLOW_THEME, {
  base: "vs-dark",
  inherit: true,
  rules: [],
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
