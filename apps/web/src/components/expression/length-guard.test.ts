// @vitest-environment happy-dom
// A paste over the limit is stopped before Monaco's own listener on its text area sees it.
import { describe, expect, it, vi } from "vitest";
import { guardPaste } from "./length-guard";
import type { monaco } from "./monaco-languages";

function fakeEditor(text: string) {
  const host = document.createElement("div");
  const textarea = document.createElement("textarea");
  host.appendChild(textarea);
  document.body.appendChild(host);
  const monacoPaste = vi.fn();
  textarea.addEventListener("paste", monacoPaste);
  const editor = {
    getDomNode: () => host,
    getModel: () => ({ getValueLength: () => text.length, getValueLengthInRange: () => 0 }),
    getSelections: () => [],
  } as unknown as monaco.editor.IStandaloneCodeEditor;
  const paste = (pasted: string) => {
    const e = new Event("paste", { bubbles: true, cancelable: true }) as ClipboardEvent;
    Object.defineProperty(e, "clipboardData", { value: { getData: () => pasted } });
    textarea.dispatchEvent(e);
    return e;
  };
  return { editor, paste, monacoPaste };
}

describe("guardPaste", () => {
  it("refuses a 5 MB paste into an expression with a message; Monaco never gets it", () => {
    const { editor, paste, monacoPaste } = fakeEditor("amount > ");
    const refuse = vi.fn();
    guardPaste(editor, "expression", refuse);
    const e = paste("9".repeat(5 * 1024 * 1024));
    expect(e.defaultPrevented).toBe(true);
    expect(monacoPaste).not.toHaveBeenCalled();
    expect(refuse).toHaveBeenCalledWith(expect.stringMatching(/^refused: that would make the expression 5,242,889 characters long; an expression holds at most 10,000$/));
  });

  it("lets a paste within the limit through", () => {
    const { editor, paste, monacoPaste } = fakeEditor("amount > ");
    const refuse = vi.fn();
    guardPaste(editor, "code", refuse);
    expect(paste("100").defaultPrevented).toBe(false);
    expect(monacoPaste).toHaveBeenCalledTimes(1);
    expect(refuse).not.toHaveBeenCalled();
  });
});
