// What a pipeline reads and writes on the runner, from the specs' `filePaths` and `writes` marks:
// file paths kept inside the data folder, and each output (a file, a Kafka topic, the dead-letter
// output) with one writer. Pure: the runner resolves the same paths on disk (realpath) itself.
import type { OperatorSpec } from "../core/spec";
import type { PipelineDocument } from "./document";

/** A file path as a relative path's segments, `..` and `.` folded; `reason` when it is absolute or leaves its folder. */
export function relativePathInFolder(p: string): { ok: true; normalized: string } | { ok: false; reason: string } {
  if (p.includes("\0")) return { ok: false, reason: "must not contain a NUL character" };
  // `/x`, `\x`, `C:x`, `C:\x`, `\\server\x`: absolute (or drive-relative) on some platform.
  if (/^([\\/]|[A-Za-z]:)/.test(p)) return { ok: false, reason: "must be a path inside the data folder, not an absolute path" };
  const parts: string[] = [];
  for (const seg of p.split(/[\\/]+/)) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (parts.length === 0) return { ok: false, reason: `must be a path inside the data folder, not one that leaves it (${JSON.stringify(p)})` };
      parts.pop();
    } else parts.push(seg);
  }
  if (parts.length === 0) return { ok: false, reason: "must name a file inside the data folder, not the folder itself" };
  return { ok: true, normalized: parts.join("/") };
}

/** One output a pipeline writes: a file (its path as written) or a Kafka topic. */
export type PipelineOutput = { kind: "file"; path: string } | { kind: "topic"; topic: string };

/** The Kafka topic of dead letters: settings.deadLetterTopic, else `<name>.dlq`. */
export function deadLetterTopic(doc: Pick<PipelineDocument, "name" | "settings">): string {
  return doc.settings.deadLetterTopic ?? `${doc.name}.dlq`;
}

const usesKafkaTypes = new Set(["source.kafka", "sink.kafka"]);

/**
 * Where dead letters go: the dead-letter topic when the pipeline uses Kafka, else
 * `<name>.dlq.jsonl` in the folder of the first file sink (the data folder without one).
 */
export function deadLetterOutput(doc: Pick<PipelineDocument, "name" | "settings" | "nodes">): PipelineOutput {
  if (doc.nodes.some((n) => usesKafkaTypes.has(n.type))) return { kind: "topic", topic: deadLetterTopic(doc) };
  const firstFileSink = doc.nodes.find((n) => n.type === "sink.file");
  const p = typeof firstFileSink?.params.path === "string" ? firstFileSink.params.path : "";
  const slash = Math.max(p.lastIndexOf("/"), p.lastIndexOf("\\"));
  return { kind: "file", path: `${slash < 0 ? "" : p.slice(0, slash + 1)}${doc.name}.dlq.jsonl` };
}

/** The output a sink node writes, from its spec's `writes` mark; undefined for other nodes or a param that is not text. */
export function sinkOutput(spec: OperatorSpec | undefined, params: unknown): PipelineOutput | undefined {
  const w = spec?.writes;
  if (!w || params === null || typeof params !== "object") return undefined;
  const v = (params as Record<string, unknown>)[w.param];
  if (typeof v !== "string") return undefined;
  return w.kind === "file" ? { kind: "file", path: v } : { kind: "topic", topic: v };
}

/** Compares outputs: files by their normalized path (`out/./a.jsonl` is `out/a.jsonl`), topics by name. */
export function outputKey(o: PipelineOutput): string {
  if (o.kind === "topic") return `topic:${o.topic}`;
  const r = relativePathInFolder(o.path);
  return `file:${r.ok ? r.normalized : o.path}`;
}

export function describeOutput(o: PipelineOutput): string {
  return o.kind === "topic" ? `topic "${o.topic}"` : `file "${o.path}"`;
}
