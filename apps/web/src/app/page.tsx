import { Workspace } from "../components/Workspace";
import { requireUser } from "../server/auth/page-gate";

/** `/?pipeline=<id>` opens that pipeline; without it the most recently changed one is shown. Signed-in users only. */
export default async function Home({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { pipeline } = await searchParams;
  const id = typeof pipeline === "string" ? pipeline : null;
  await requireUser(id ? `/?pipeline=${encodeURIComponent(id)}` : "/");
  return <Workspace initialPipelineId={id} />;
}
