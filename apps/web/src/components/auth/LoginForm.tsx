"use client";
// The sign-in form: email and password to /api/auth/login, then on to where the person was going.
import { useEffect, useState, type FormEvent } from "react";
import { errorMessage, postJson } from "./post-json";
import "./auth.css";

/** Only paths on this site: `next` must never send someone elsewhere after signing in. */
function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

export function LoginForm({ next }: { next: string | null }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The server-rendered form can be typed into before React takes it over: the fields stay
  // uncontrolled (read from the form on submit, so nothing typed early is lost) and the button is
  // disabled until then, so an early Enter or click cannot submit the bare HTML form instead.
  const [ready, setReady] = useState(false);
  useEffect(() => setReady(true), []);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const email = String(form.get("email") ?? "");
    const password = String(form.get("password") ?? "");
    setBusy(true);
    setError(null);
    try {
      const res = await postJson("/api/auth/login", { email, password });
      if (!res.ok) {
        setError(errorMessage(res.data, `sign-in failed (${res.status})`));
        return;
      }
      window.location.assign(safeNext(next));
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="kf-auth">
      <form className="kf-auth__card" method="post" onSubmit={submit} data-testid="login-form">
        <h1>Sign in to Keyflow</h1>
        <label className="kf-form-field">
          Email
          <input type="email" name="email" autoComplete="username" required data-testid="login-email" />
        </label>
        <label className="kf-form-field">
          Password
          <input type="password" name="password" autoComplete="current-password" required data-testid="login-password" />
        </label>
        {error ? (
          <div className="kf-auth__error" role="alert" data-testid="login-error">
            {error}
          </div>
        ) : null}
        <button type="submit" className="kf-auth__submit" disabled={busy || !ready} data-testid="login-submit">
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
