"use client";
// The signed-in person's notifications, newest first: what happened, who did it and why, whether
// the webhook took it, and "mark read" (one, or all).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "../../trpc/react";
// The page frame (.kf-page) is styled with the other signed-in pages.
import "../auth/auth.css";
import "./notifications.css";

export function NotificationsList() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.notifications.list.queryOptions({ limit: 100 }));
  const markRead = useMutation(trpc.notifications.markRead.mutationOptions({ onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.notifications.list.pathKey() }) }));
  if (list.error) return <p role="alert">{list.error.message}</p>;
  if (!list.data) return <p>Loading…</p>;
  return (
    <section className="kf-notifications" data-testid="notifications">
      <p>
        {list.data.unread} unread.{" "}
        <button type="button" className="kf-button kf-button--small" disabled={list.data.unread === 0 || markRead.isPending} onClick={() => markRead.mutate({})} data-testid="notifications-read-all">
          Mark all read
        </button>
      </p>
      {list.data.notifications.length === 0 ? <p>Nothing yet. Approvers are told here of emergency rollbacks.</p> : null}
      <ul>
        {list.data.notifications.map((n) => (
          <li key={n.id} className={n.readAt ? "kf-notifications__read" : "kf-notifications__unread"} data-testid="notification" data-kind={n.kind} data-read={n.readAt ? "true" : "false"}>
            <strong>{n.title}</strong> <span className="kf-notifications__meta">{new Date(n.at).toISOString().slice(0, 19).replace("T", " ")} UTC · {n.actor}</span>
            {n.body ? <p>{n.body}</p> : null}
            <span className="kf-notifications__meta">
              {n.pipelineId ? <a href={`/?pipeline=${n.pipelineId}`}>open the pipeline</a> : null}
              {n.webhookResult ? ` · webhook: ${n.webhookResult}` : ""}
            </span>{" "}
            {n.readAt ? null : (
              <button type="button" className="kf-button kf-button--small" onClick={() => markRead.mutate({ ids: [n.id] })} data-testid="notification-read">
                Mark read
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
