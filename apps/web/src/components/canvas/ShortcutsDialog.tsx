"use client";
// Every keyboard shortcut of the editor (EditorContext.tsx handles them).
import { useEditor } from "./EditorContext";
import { Modal } from "./Modal";

export const SHORTCUTS: readonly { keys: string[]; what: string }[] = [
  { keys: ["/"], what: "Search operators; Enter adds the highlighted one at a free spot" },
  { keys: ["Tab"], what: "Move between nodes on the canvas (then Enter or Space selects)" },
  { keys: ["C"], what: "Connect the selected node: pick a port with ↑ ↓, Enter" },
  { keys: ["I"], what: "Edit the selected node in the inspector (Esc returns to the canvas)" },
  { keys: ["Delete"], what: "Delete the selection (also Backspace)" },
  { keys: ["Ctrl", "Z"], what: "Undo" },
  { keys: ["Ctrl", "Shift", "Z"], what: "Redo (also Ctrl+Y)" },
  { keys: ["Ctrl", "C"], what: "Copy the selected nodes and the edges between them" },
  { keys: ["Ctrl", "X"], what: "Cut" },
  { keys: ["Ctrl", "V"], what: "Paste (new ids, offset)" },
  { keys: ["Ctrl", "D"], what: "Duplicate the selection" },
  { keys: ["Ctrl", "A"], what: "Select everything" },
  { keys: ["Shift", "drag"], what: "Select with a box" },
  { keys: ["Ctrl", "click"], what: "Add a node to the selection" },
  { keys: ["←", "↑", "→", "↓"], what: "Move the selected nodes" },
  { keys: ["Shift", "L"], what: "Auto-layout" },
  { keys: ["F"], what: "Zoom to fit" },
  { keys: ["Esc"], what: "Clear the selection" },
  { keys: ["?"], what: "This list" },
];

export function ShortcutsDialog() {
  const { commands } = useEditor();
  return (
    <Modal title="Keyboard shortcuts" onClose={commands.closeDialog} testId="shortcuts-dialog">
      <div className="kf-modal__body">
        <table className="kf-shortcuts">
          <tbody>
            {SHORTCUTS.map((s) => (
              <tr key={s.what}>
                <td>
                  {s.keys.map((k, i) => (
                    <span key={i}>
                      {i > 0 ? " " : ""}
                      <kbd>{k}</kbd>
                    </span>
                  ))}
                </td>
                <td>{s.what}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <p className="kf-modal__foot">On macOS, Cmd works wherever Ctrl is written.</p>
      </div>
    </Modal>
  );
}
