// @vitest-environment happy-dom
// A paste over the limit is stopped before Monaco's own listener on its text area sees it.
import { describe, expect, it, vi } from "vitest";
import { guardPaste, limitedOnChange } from "./length-guard";
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

describe("limitedOnChange", () => {
  it("puts a change past the limit back and keeps its message (the put-back's own change event does not clear it)", () => {
    const messages: (string | undefined)[] = [];
    const stored: string[] = [];
    let handler: (next: string | undefined) => void = () => {};
    // Monaco fires its change event synchronously inside setValue.
    const editor = { setValue: vi.fn((text: string) => handler(text)) } as unknown as monaco.editor.IStandaloneCodeEditor;
    handler = limitedOnChange("expression", () => editor, "amount > 1000", (text) => stored.push(text), (m) => messages.push(m));
    handler(`amount > ${"9".repeat(5_000_000)}`);
    expect(editor.setValue).toHaveBeenCalledWith("amount > 1000");
    expect(stored).toEqual([]);
    expect(messages.at(-1)).toMatch(/^refused: that would make the expression 5,000,009 characters long/);
    handler("amount > 2000");
    expect({ stored, message: messages.at(-1) }).toEqual({ stored: ["amount > 2000"], message: undefined });
  });
});

