import { ChangePassword } from "../../components/auth/ChangePassword";
import { requireUser } from "../../server/auth/page-gate";

export const dynamic = "force-dynamic";

export default async function AccountPage() {
  const user = await requireUser("/account");
  return (
    <main className="kf-page">
      <div className="kf-page__head">
        <a href="/">← Designer</a>
        <h1>
          {user.name} <span className="kf-usermenu__role">{user.email} · {user.role}</span>
        </h1>
      </div>
      <ChangePassword />
    </main>
  );
}
