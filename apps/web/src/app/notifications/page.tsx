import { NotificationsList } from "../../components/notifications/NotificationsList";
import { requireUser } from "../../server/auth/page-gate";

export const dynamic = "force-dynamic";

export default async function NotificationsPage() {
  await requireUser("/notifications");
  return (
    <main className="kf-page">
      <div className="kf-page__head">
        <a href="/">← Designer</a>
        <h1>Notifications</h1>
      </div>
      <NotificationsList />
    </main>
  );
}
