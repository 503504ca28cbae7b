import { UsersAdmin } from "../../components/auth/UsersAdmin";
import { requireUser } from "../../server/auth/page-gate";

export const dynamic = "force-dynamic";

export default async function UsersPage() {
  await requireUser("/users", "admin");
  return <UsersAdmin />;
}
