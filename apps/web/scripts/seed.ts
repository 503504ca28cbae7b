// Seeding through the designer's own API (as any client would): make sure a pipeline exists with
// at least one version, optionally deploy its newest version. Used by `npm start` for the example
// pipeline; idempotent, so a restart finds what the last run created.
//
//   tsx apps/web/scripts/seed.ts http://localhost:3000 path/to/pipeline.json [--deploy]
import fs from "node:fs";
import { pathToFileURL } from "node:url";
import { createTRPCClient, httpLink } from "@trpc/client";
import superjson from "superjson";
import { pipelineDocumentSchema, type PipelineDocumentInput } from "@keyflow/operators";
import type { AppRouter } from "../src/server/root";

export interface SeedResult {
  pipelineId: string;
  versionId: string;
  versionNumber: number;
  /** False when the pipeline already had a version. */
  created: boolean;
  deploymentId?: string;
}

export async function seedPipeline(opts: {
  url: string;
  document: PipelineDocumentInput;
  message?: string;
  /** Deploy the newest version unless one of its deployments is already pending or running. */
  deploy?: boolean;
  actor?: string;
}): Promise<SeedResult> {
  const api = createTRPCClient<AppRouter>({
    links: [httpLink({ url: `${opts.url.replace(/\/+$/, "")}/api/trpc`, transformer: superjson, headers: { "x-keyflow-actor": opts.actor ?? "keyflow-seed" } })],
  });
  const graph = pipelineDocumentSchema.parse(opts.document);
  const existing = (await api.pipeline.list.query()).find((p) => p.name === graph.name);
  const pipelineId = existing?.id ?? (await api.pipeline.create.mutate({ name: graph.name, description: graph.description, graph })).id;
  let pipeline = await api.pipeline.get.query({ id: pipelineId });
  let created = false;
  if (pipeline.versions.length === 0) {
    await api.pipeline.saveVersion.mutate({ pipelineId, graph, message: opts.message ?? "example pipeline" });
    pipeline = await api.pipeline.get.query({ id: pipelineId });
    created = true;
  }
  const newest = pipeline.versions[0];
  if (!newest) throw new Error(`seed: pipeline ${graph.name} has no version after saving one`);
  const result: SeedResult = { pipelineId, versionId: newest.id, versionNumber: newest.number, created };
  if (opts.deploy) {
    const live = pipeline.deployments.find((d) => d.versionId === newest.id && (d.status === "pending" || d.status === "running"));
    result.deploymentId = live?.id ?? (await api.deployment.deploy.mutate({ versionId: newest.id })).id;
  }
  return result;
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const [url, file] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
  if (!url || !file) {
    console.error("usage: tsx apps/web/scripts/seed.ts <web url> <pipeline.json> [--deploy]");
    process.exit(2);
  }
  const document = pipelineDocumentSchema.parse(JSON.parse(fs.readFileSync(file, "utf8")));
  try {
    console.log(JSON.stringify(await seedPipeline({ url, document, deploy: process.argv.includes("--deploy") })));
  } catch (error) {
    console.error(`seed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
