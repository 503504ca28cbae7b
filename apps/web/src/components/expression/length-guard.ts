// Length limits of expression and code fields in the browser, the same as the server's
// (@keyflow/operators limits): a paste over the limit never reaches the editor or the graph, so a
// 5 MB paste is refused with a message instead of being checked, rendered and saved.
import { MAX_CODE_LENGTH, MAX_EXPRESSION_LENGTH } from "@keyflow/operators";
import type { monaco } from "./monaco-languages";

export type LimitedKind = "expression" | "code";

export const lengthLimit = (kind: LimitedKind): number => (kind === "expression" ? MAX_EXPRESSION_LENGTH : MAX_CODE_LENGTH);

export function tooLongMessage(kind: LimitedKind, length: number): string {
  return `refused: that would make the ${kind} ${length.toLocaleString("en-US")} characters long; ${kind === "expression" ? "an expression" : "a code field"} holds at most ${lengthLimit(kind).toLocaleString("en-US")}`;
}

/** Whether `text` fits its field; tells `onTooLong` why not, or clears its message when it fits. */
export function fits(kind: LimitedKind, text: string, onTooLong: ((message: string | undefined) => void) | undefined): boolean {
  const ok = text.length <= lengthLimit(kind);
  onTooLong?.(ok ? undefined : tooLongMessage(kind, text.length));
  return ok;
}

/**
 * Refuses a paste that would take the editor's text over the limit before Monaco inserts it (the
 * capture phase runs before Monaco's own listener on its text area). Returns the disposer.
 */
export function guardPaste(editor: monaco.editor.IStandaloneCodeEditor, kind: LimitedKind, refuse: (message: string) => void): () => void {
  const node = editor.getDomNode();
  if (!node) return () => {};
  const onPaste = (e: ClipboardEvent): void => {
    const pasted = e.clipboardData?.getData("text/plain").length ?? 0;
    const model = editor.getModel();
    const selected = (editor.getSelections() ?? []).reduce((n, s) => n + (model?.getValueLengthInRange(s) ?? 0), 0);
    const after = (model?.getValueLength() ?? 0) - selected + pasted;
    if (after <= lengthLimit(kind)) return;
    e.preventDefault();
    e.stopPropagation();
    refuse(tooLongMessage(kind, after));
  };
  node.addEventListener("paste", onPaste, true);
  return () => node.removeEventListener("paste", onPaste, true);
}

/**
 * Monaco's onChange for a limited field. A change past the limit that the paste guard did not see
 * (typed, dropped, or pasted through Monaco's own clipboard command) is put back to the last value;
 * the put-back's own change event is ignored, so the refusal's message stays on screen.
 */
export function limitedOnChange(
  kind: LimitedKind,
  editor: () => monaco.editor.IStandaloneCodeEditor | null,
  last: string,
  onChange: (text: string) => void,
  onTooLong: ((message: string | undefined) => void) | undefined,
): (next: string | undefined) => void {
  let puttingBack = false;
  return (next) => {
    if (puttingBack) return;
    const text = next ?? "";
    if (fits(kind, text, onTooLong)) return onChange(text);
    puttingBack = true;
    try {
      editor()?.setValue(last);
    } finally {
      puttingBack = false;
    }
  };
}

