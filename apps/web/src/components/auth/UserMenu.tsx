"use client";
// Who is signed in, with the way to the audit trail, the users page (admins) and out.
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../trpc/react";
import { NotificationsBadge } from "../notifications/NotificationsBadge";
import { postJson } from "./post-json";
import "./auth.css";

export async function signOut(): Promise<void> {
  await postJson("/api/auth/logout", {});
  window.location.assign("/login");
}

export function UserMenu() {
  const trpc = useTRPC();
  const me = useQuery(trpc.users.me.queryOptions(undefined, { staleTime: 60_000 }));
  if (!me.data) return <div className="kf-usermenu" />;
  return (
    <div className="kf-usermenu" data-testid="user-menu">
      <a href="/audit" data-testid="nav-audit">
        Audit
      </a>
      {me.data.role !== "analyst" ? <NotificationsBadge /> : null}
      {me.data.role === "admin" ? (
        <a href="/users" data-testid="nav-users">
          Users
        </a>
      ) : null}
      <a href="/account" title={`${me.data.email}: your account and password`} data-testid="nav-account">
        <span data-testid="user-name">{me.data.name}</span> <span className="kf-usermenu__role" data-testid="user-role">{me.data.role}</span>
      </a>
      <button type="button" onClick={() => void signOut()} data-testid="logout">
        Sign out
      </button>
    </div>
  );
}
