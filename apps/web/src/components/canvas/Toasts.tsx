"use client";
// Short messages in the corner: a refused connection and why, a saved version, a failed save.
import { createContext, useCallback, useContext, useMemo, useRef, useState, type ReactNode } from "react";

export type ToastTone = "info" | "success" | "warning" | "error";

export interface ToastInput {
  tone?: ToastTone;
  title: string;
  message?: string;
  /** ms; default 4.5 s (errors 7 s). */
  duration?: number;
}

interface Toast extends Required<Pick<ToastInput, "title">> {
  id: number;
  tone: ToastTone;
  message?: string;
}

const ToastContext = createContext<(toast: ToastInput) => void>(() => undefined);

export function useToast(): (toast: ToastInput) => void {
  return useContext(ToastContext);
}

const MAX_TOASTS = 4;

export function ToastProvider({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const nextId = useRef(1);
  const dismiss = useCallback((id: number) => setToasts((all) => all.filter((t) => t.id !== id)), []);
  const show = useCallback(
    (input: ToastInput) => {
      const id = nextId.current++;
      const tone = input.tone ?? "info";
      setToasts((all) => [...all.filter((t) => !(t.title === input.title && t.message === input.message)), { id, tone, title: input.title, ...(input.message ? { message: input.message } : {}) }].slice(-MAX_TOASTS));
      window.setTimeout(() => dismiss(id), input.duration ?? (tone === "error" ? 7_000 : 4_500));
    },
    [dismiss],
  );
  const value = useMemo(() => show, [show]);
  return (
    <ToastContext.Provider value={value}>
      {children}
      <div className="kf-toasts" role="status" aria-live="polite">
        {toasts.map((t) => (
          <div key={t.id} className={`kf-toast kf-toast--${t.tone}`} data-testid="toast" data-tone={t.tone}>
            <div className="kf-toast__body">
              <strong className="kf-toast__title">{t.title}</strong>
              {t.message ? <span className="kf-toast__message">{t.message}</span> : null}
            </div>
            <button type="button" className="kf-toast__close" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
              ×
            </button>
          </div>
        ))}
      </div>
    </ToastContext.Provider>
  );
}
