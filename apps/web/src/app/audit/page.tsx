import { AuditView } from "../../components/audit/AuditView";
import { requireUser } from "../../server/auth/page-gate";

export const dynamic = "force-dynamic";

export default async function AuditPage() {
  await requireUser("/audit");
  return (
    <main className="kf-page">
      <div className="kf-page__head">
        <a href="/">← Designer</a>
        <h1>Audit trail</h1>
      </div>
      <AuditView />
    </main>
  );
}
