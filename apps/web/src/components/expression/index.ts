// Expression and code editors for the inspector: CEL params in Monaco, process.custom code in
// Monaco's TypeScript. Both load Monaco in the browser only.
export { CelEditor, type CelEditorProps } from "./CelEditor";
export { CustomCodeEditor, type CustomCodeEditorProps } from "./CustomCodeEditor";
export { celCompletions, celMarkers, type CelMarker } from "./cel-language";
export { CelParamControl, CodeParamControl, expressionParamEditors } from "./param-editors";
