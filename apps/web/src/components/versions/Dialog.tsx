"use client";
// A small modal: backdrop, title, body; Escape and a click on the backdrop close it.
import { useEffect, type ReactNode } from "react";

export function Dialog({ title, onClose, children, testId, wide = false }: { title: string; onClose: () => void; children: ReactNode; testId: string; wide?: boolean }) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  return (
    <div className="kf-dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div className={`kf-dialog${wide ? " kf-dialog--wide" : ""}`} role="dialog" aria-modal="true" aria-label={title} data-testid={testId}>
        <header className="kf-dialog__header">
          <h3>{title}</h3>
          <button type="button" className="kf-button kf-dialog__close" onClick={onClose} aria-label="Close">
            ✕
          </button>
        </header>
        <div className="kf-dialog__body">{children}</div>
      </div>
    </div>
  );
}
