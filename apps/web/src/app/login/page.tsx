import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { LoginForm } from "../../components/auth/LoginForm";
import { currentUser } from "../../server/auth/current-user";

export const dynamic = "force-dynamic";

export default async function Login({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { next } = await searchParams;
  if (await currentUser(await headers())) redirect("/");
  return <LoginForm next={typeof next === "string" ? next : null} />;
}
