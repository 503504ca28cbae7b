"use client";
// The unread count of the signed-in person's notifications (approvers: emergency rollbacks), linking
// to the list. Shown only to those notifications are addressed to; polled every half minute.
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../trpc/react";
import "./notifications.css";

export function NotificationsBadge() {
  const trpc = useTRPC();
  const list = useQuery(trpc.notifications.list.queryOptions({ limit: 1 }, { refetchInterval: 30_000 }));
  if (!list.data) return null;
  return (
    <a href="/notifications" className="kf-notify-badge" data-testid="nav-notifications" data-unread={list.data.unread} title={`${list.data.unread} unread notifications`}>
      Notifications{list.data.unread > 0 ? <span className="kf-notify-badge__count" data-testid="notifications-unread">{list.data.unread}</span> : null}
    </a>
  );
}
