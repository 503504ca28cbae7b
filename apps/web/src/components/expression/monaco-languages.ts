// Registers Keyflow's languages with the local Monaco, once per page (browser only: imported from
// ssr:false components):
// - `cel`: Monarch tokens, completion of the record's fields, and (from CelEditor) markers from the
//   engine's checkExpression;
// - TypeScript for process.custom: the context API's declarations (`processCustomTypeDefinitions`)
//   as an extra lib, so `ctx.` completes and a wrong call is a type error, as in an IDE.
import { processCustomTypeDefinitions } from "@keyflow/operators";
import { monaco } from "../editor/monaco";
import { CEL_LANGUAGE_ID, celCompletions, celLanguageConfiguration, celMonarch, type CelCompletion } from "./cel-language";

export { monaco };

/** The record fields offered in each CEL model (by model URI), set by the CelEditor that owns the model. */
export const celModelFields = new Map<string, readonly string[] | undefined>();

export const PROCESS_CUSTOM_LIB_URI = "file:///keyflow/process-custom-context.d.ts";

const KIND: Record<CelCompletion["kind"], monaco.languages.CompletionItemKind> = {
  field: monaco.languages.CompletionItemKind.Field,
  function: monaco.languages.CompletionItemKind.Function,
  method: monaco.languages.CompletionItemKind.Method,
  keyword: monaco.languages.CompletionItemKind.Keyword,
};

let registered = false;

export function registerKeyflowLanguages(): void {
  if (registered) return;
  registered = true;

  monaco.languages.register({ id: CEL_LANGUAGE_ID, extensions: [".cel"], aliases: ["CEL", "cel"] });
  monaco.languages.setMonarchTokensProvider(CEL_LANGUAGE_ID, celMonarch);
  monaco.languages.setLanguageConfiguration(CEL_LANGUAGE_ID, celLanguageConfiguration);
  monaco.languages.registerCompletionItemProvider(CEL_LANGUAGE_ID, {
    triggerCharacters: ["."],
    provideCompletionItems(model, position) {
      const before = model.getValueInRange({ startLineNumber: position.lineNumber, startColumn: 1, endLineNumber: position.lineNumber, endColumn: position.column });
      const word = model.getWordUntilPosition(position);
      const range = { startLineNumber: position.lineNumber, endLineNumber: position.lineNumber, startColumn: word.startColumn, endColumn: word.endColumn };
      const fields = celModelFields.get(model.uri.toString());
      return {
        suggestions: celCompletions(before, fields).map((c) => ({
          label: c.label,
          kind: KIND[c.kind],
          detail: c.detail,
          insertText: c.insertText,
          ...(c.snippet ? { insertTextRules: monaco.languages.CompletionItemInsertTextRule.InsertAsSnippet } : {}),
          sortText: c.sortText,
          range,
        })),
      };
    },
  });

  const ts = monaco.typescript.typescriptDefaults;
  ts.setCompilerOptions({
    target: monaco.typescript.ScriptTarget.ES2020,
    module: monaco.typescript.ModuleKind.ESNext,
    // No DOM: the sandbox has no window, fetch or timers, and the editor should not suggest them.
    lib: ["es2020"],
    strict: true,
    noImplicitAny: true,
    allowNonTsExtensions: true,
    noEmit: true,
  });
  ts.setDiagnosticsOptions({ noSemanticValidation: false, noSyntaxValidation: false });
  ts.setEagerModelSync(true);
  ts.addExtraLib(processCustomTypeDefinitions, PROCESS_CUSTOM_LIB_URI);
}
