// Monaco's core editor worker (diffing, word ranges, links), bundled by Next from the local package.
import "monaco-editor/esm/vs/editor/editor.worker.js";
