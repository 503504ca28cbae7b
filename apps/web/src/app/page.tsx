import { Workspace } from "../components/Workspace";

/** `/?pipeline=<id>` opens that pipeline; without it the most recently changed one is shown. */
export default async function Home({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const { pipeline } = await searchParams;
  return <Workspace initialPipelineId={typeof pipeline === "string" ? pipeline : null} />;
}
