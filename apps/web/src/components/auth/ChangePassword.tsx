"use client";
// Your own password: the current one, then the new one twice. Your other sessions end.
import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useTRPC } from "../../trpc/react";
import "./auth.css";

export function ChangePassword() {
  const trpc = useTRPC();
  const change = useMutation(trpc.users.changePassword.mutationOptions());
  const [form, setForm] = useState({ currentPassword: "", newPassword: "", repeat: "" });
  const mismatch = form.repeat !== "" && form.repeat !== form.newPassword;

  function submit(event: FormEvent) {
    event.preventDefault();
    if (form.newPassword !== form.repeat) return;
    change.mutate({ currentPassword: form.currentPassword, newPassword: form.newPassword }, { onSuccess: () => setForm({ currentPassword: "", newPassword: "", repeat: "" }) });
  }

  return (
    <form className="kf-auth__card" onSubmit={submit} data-testid="change-password-form">
      <h1>Change your password</h1>
      <label className="kf-form-field">
        Current password
        <input type="password" autoComplete="current-password" required value={form.currentPassword} onChange={(e) => setForm({ ...form, currentPassword: e.target.value })} />
      </label>
      <label className="kf-form-field">
        New password (at least 12 characters)
        <input type="password" autoComplete="new-password" required minLength={12} value={form.newPassword} onChange={(e) => setForm({ ...form, newPassword: e.target.value })} />
      </label>
      <label className="kf-form-field">
        New password again
        <input type="password" autoComplete="new-password" required value={form.repeat} onChange={(e) => setForm({ ...form, repeat: e.target.value })} />
      </label>
      {mismatch ? <div className="kf-auth__error">the two new passwords differ</div> : null}
      {change.error ? <div className="kf-auth__error">{change.error.message}</div> : null}
      {change.data ? <div role="status">Password changed{change.data.sessionsEnded > 0 ? `; ${change.data.sessionsEnded} other session${change.data.sessionsEnded === 1 ? "" : "s"} signed out` : ""}.</div> : null}
      <button type="submit" className="kf-auth__submit" disabled={change.isPending || mismatch}>
        Change password
      </button>
    </form>
  );
}
