"use client";
// Above the canvas: undo/redo, auto-layout, zoom to fit, the shortcuts list, the autosave state
// and "Save version" (disabled, with the reason, while the validator finds errors). `children`
// is a slot for more actions (deploy).
import { memo, type ReactNode } from "react";
import { formatTime } from "../format";
import { useAutosave, useEditor, useEditorState, useEditorVerdict } from "./EditorContext";

function AutosaveState() {
  const { status, retry } = useAutosave();
  switch (status.state) {
    case "off":
      return null;
    case "pending":
      return (
        <span className="kf-autosave" data-testid="autosave" data-state="pending">
          Unsaved changes…
        </span>
      );
    case "saving":
      return (
        <span className="kf-autosave" data-testid="autosave" data-state="saving">
          Saving draft…
        </span>
      );
    case "error":
      return (
        <span className="kf-autosave kf-autosave--error" data-testid="autosave" data-state="error" title={status.message}>
          Autosave failed{" "}
          <button type="button" className="kf-link" onClick={retry}>
            retry
          </button>
        </span>
      );
    default:
      return (
        <span className="kf-autosave" data-testid="autosave" data-state="saved" title="The draft autosaves as you edit">
          {status.at ? `Draft saved ${formatTime(status.at)}` : "Draft saved"}
        </span>
      );
  }
}

const Icon = ({ d }: { d: string }) => (
  <svg viewBox="0 0 16 16" width="15" height="15" aria-hidden="true">
    <path d={d} fill="none" stroke="currentColor" strokeWidth="1.5" strokeLinecap="round" strokeLinejoin="round" />
  </svg>
);

function EditorToolbarView({ children, onBackToDraft }: { children?: ReactNode; onBackToDraft?: () => void }) {
  const { commands, readOnly, mode } = useEditor();
  const canUndo = useEditorState((s) => s.canUndo);
  const canRedo = useEditorState((s) => s.canRedo);
  const verdict = useEditorVerdict();
  return (
    <div className="kf-toolbar" role="toolbar" aria-label="Editor" data-testid="editor-toolbar">
      {readOnly ? (
        <span className="kf-toolbar__readonly" data-testid="readonly-banner">
          {mode.kind === "version" ? `Version v${mode.number}` : "Read-only"} · read-only
          {onBackToDraft ? (
            <button type="button" className="kf-button kf-button--small" onClick={onBackToDraft} data-testid="back-to-draft">
              Edit the draft
            </button>
          ) : null}
        </span>
      ) : (
        <>
          <button type="button" className="kf-tool" onClick={commands.undo} disabled={!canUndo} title="Undo (Ctrl+Z)" aria-label="Undo" data-testid="undo">
            <Icon d="M6 4 3 7l3 3M3.5 7H10a3 3 0 0 1 0 6H8" />
          </button>
          <button type="button" className="kf-tool" onClick={commands.redo} disabled={!canRedo} title="Redo (Ctrl+Shift+Z)" aria-label="Redo" data-testid="redo">
            <Icon d="m10 4 3 3-3 3M12.5 7H6a3 3 0 0 0 0 6h2" />
          </button>
          <span className="kf-toolbar__sep" />
          <button type="button" className="kf-tool kf-tool--text" onClick={() => void commands.autoLayout()} title="Auto-layout (Shift+L)" data-testid="auto-layout">
            <Icon d="M2 3h4v3H2zM10 2h4v3h-4zM10 10h4v3h-4zM6 4.5h2.5v6H10M8.5 3.5H10" />
            Layout
          </button>
        </>
      )}
      <button type="button" className="kf-tool kf-tool--text" onClick={commands.fitView} title="Zoom to fit (F)" data-testid="fit-view">
        <Icon d="M2 6V2h4M10 2h4v4M14 10v4h-4M6 14H2v-4" />
        Fit
      </button>
      <button type="button" className="kf-tool" onClick={() => commands.openDialog({ kind: "shortcuts" })} title="Keyboard shortcuts (?)" aria-label="Keyboard shortcuts" data-testid="shortcuts">
        ?
      </button>
      <span className="kf-toolbar__spacer" />
      <AutosaveState />
      {children}
      {!readOnly ? (
        <>
          {verdict.blocked ? (
            <span className="kf-toolbar__blocked" data-testid="save-version-blocked" title={verdict.reason}>
              {verdict.errors} error{verdict.errors === 1 ? "" : "s"} to fix before saving
            </span>
          ) : null}
          <button
            type="button"
            className="kf-button kf-button--primary"
            onClick={() => commands.openDialog({ kind: "save-version" })}
            disabled={verdict.blocked}
            title={verdict.reason ?? "Save the draft as a new immutable version"}
            data-testid="save-version"
          >
            Save version
          </button>
        </>
      ) : null}
    </div>
  );
}

export const EditorToolbar = memo(EditorToolbarView);
