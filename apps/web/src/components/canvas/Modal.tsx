"use client";
// A modal dialog: focus moves into it when it opens and back where it was when it closes;
// Escape and a click outside close it.
import { useEffect, useId, useRef, type ReactNode } from "react";

export function Modal({ title, onClose, children, testId, wide }: { title: ReactNode; onClose: () => void; children: ReactNode; testId: string; wide?: boolean }) {
  const titleId = useId();
  const panel = useRef<HTMLDivElement | null>(null);
  useEffect(() => {
    const previous = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const root = panel.current;
    const first = root?.querySelector<HTMLElement>("[data-autofocus]") ?? root?.querySelector<HTMLElement>(".kf-modal__body :is(input, textarea, select, button:not([disabled]))");
    // Nothing to type into (a list to read): the dialog itself takes focus, so Escape reaches it.
    (first ?? root)?.focus();
    return () => {
      if (previous?.isConnected) previous.focus({ preventScroll: true });
    };
  }, []);
  return (
    <div
      className="kf-modal"
      onMouseDown={(e) => {
        if (e.target === e.currentTarget) onClose();
      }}
    >
      <div
        ref={panel}
        className={`kf-modal__panel${wide ? " kf-modal__panel--wide" : ""}`}
        role="dialog"
        aria-modal="true"
        tabIndex={-1}
        aria-labelledby={titleId}
        data-testid={testId}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.preventDefault();
            e.stopPropagation();
            onClose();
          }
        }}
      >
        <header className="kf-modal__head">
          <h2 id={titleId} className="kf-modal__title">
            {title}
          </h2>
          <button type="button" className="kf-icon-button" aria-label="Close" onClick={onClose}>
            ×
          </button>
        </header>
        {children}
      </div>
    </div>
  );
}
