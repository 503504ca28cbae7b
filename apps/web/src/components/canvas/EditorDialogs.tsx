"use client";
// Whichever editor dialog is open (EditorContext's `dialog`).
import { ConnectDialog } from "./ConnectDialog";
import { useEditorUi } from "./EditorContext";
import { SaveVersionDialog } from "./SaveVersionDialog";
import { ShortcutsDialog } from "./ShortcutsDialog";

export function EditorDialogs() {
  const { dialog } = useEditorUi();
  if (!dialog) return null;
  switch (dialog.kind) {
    case "connect":
      return <ConnectDialog nodeId={dialog.nodeId} />;
    case "shortcuts":
      return <ShortcutsDialog />;
    case "save-version":
      return <SaveVersionDialog />;
  }
}
