"use client";
// The users page (admins): every account with its role, a role picker per account, a new-account form.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { UserRole } from "@keyflow/db/browser";
import { useTRPC } from "../../trpc/react";
import "./auth.css";

const ROLES: UserRole[] = ["analyst", "approver", "admin"];

export function UsersAdmin() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const users = useQuery(trpc.users.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.users.list.queryKey() });
  const setRole = useMutation(trpc.users.setRole.mutationOptions({ onSettled: refresh }));
  const create = useMutation(trpc.users.create.mutationOptions({ onSuccess: refresh }));
  const [form, setForm] = useState({ email: "", name: "", role: "analyst" as UserRole, password: "" });
  const setPassword = useMutation(trpc.users.setPassword.mutationOptions());
  const [reset, setReset] = useState<{ userId: string; password: string } | null>(null);

  function submit(event: FormEvent) {
    event.preventDefault();
    create.mutate(form, { onSuccess: () => setForm({ email: "", name: "", role: "analyst", password: "" }) });
  }

  return (
    <main className="kf-page">
      <div className="kf-page__head">
        <a href="/">← Designer</a>
        <h1>Users</h1>
      </div>
      {users.error ? <p className="kf-auth__error">{users.error.message}</p> : null}
      {setRole.error ? <p className="kf-auth__error" role="alert">{setRole.error.message}</p> : null}
      {setPassword.error ? <p className="kf-auth__error" role="alert">{setPassword.error.message}</p> : null}
      {setPassword.isSuccess ? <p role="status">Password set; that person's sessions were signed out.</p> : null}
      <table className="kf-table" data-testid="users-table">
        <thead>
          <tr>
            <th>Email</th>
            <th>Name</th>
            <th>Role</th>
            <th>Since</th>
            <th>Password</th>
          </tr>
        </thead>
        <tbody>
          {(users.data ?? []).map((user) => (
            <tr key={user.id} data-testid={`user-row-${user.email}`}>
              <td>{user.email}</td>
              <td>{user.name}</td>
              <td>
                <select className="kf-select" value={user.role} aria-label={`role of ${user.email}`} onChange={(e) => setRole.mutate({ userId: user.id, role: e.target.value as UserRole })}>
                  {ROLES.map((r) => (
                    <option key={r} value={r}>
                      {r}
                    </option>
                  ))}
                </select>
              </td>
              <td>{new Date(user.createdAt).toLocaleDateString()}</td>
              <td>
                {reset?.userId === user.id ? (
                  <form
                    onSubmit={(e) => {
                      e.preventDefault();
                      setPassword.mutate({ userId: user.id, newPassword: reset.password }, { onSuccess: () => setReset(null) });
                    }}
                  >
                    <input type="password" autoComplete="new-password" minLength={12} required placeholder="new password" value={reset.password} onChange={(e) => setReset({ userId: user.id, password: e.target.value })} aria-label={`new password for ${user.email}`} />{" "}
                    <button type="submit" className="kf-button kf-button--small" disabled={setPassword.isPending}>
                      Set
                    </button>{" "}
                    <button type="button" className="kf-button kf-button--small" onClick={() => setReset(null)}>
                      Cancel
                    </button>
                  </form>
                ) : (
                  <button type="button" className="kf-button kf-button--small" onClick={() => setReset({ userId: user.id, password: "" })}>
                    Reset…
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form className="kf-auth__card" style={{ marginTop: 24 }} onSubmit={submit} data-testid="new-user-form">
        <h1>New account</h1>
        <label className="kf-form-field">
          Email
          <input type="email" required value={form.email} onChange={(e) => setForm({ ...form, email: e.target.value })} />
        </label>
        <label className="kf-form-field">
          Name
          <input required value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
        </label>
        <label className="kf-form-field">
          Role
          <select value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value as UserRole })}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <label className="kf-form-field">
          Initial password (at least 12 characters)
          <input type="password" autoComplete="new-password" required minLength={12} value={form.password} onChange={(e) => setForm({ ...form, password: e.target.value })} />
        </label>
        {create.error ? <div className="kf-auth__error">{create.error.message}</div> : null}
        <button type="submit" className="kf-auth__submit" disabled={create.isPending}>
          Create
        </button>
      </form>
    </main>
  );
}
