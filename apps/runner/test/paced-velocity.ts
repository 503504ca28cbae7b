// A keyBy -> eager velocity job over long payment lines (a heap table touched once per record, as
// in the latency bench's W1), with a file source that can pause after each batch as a source
// reading a quiet topic does: the tests of what a job does between batches and barriers use it.
import type { PipelineDocument } from "@keyflow/operators";
import { validPipeline } from "@keyflow/operators/testing";
import type { RecordSource } from "../src/io/types";

export function pacedVelocityPipeline(name: string, settings: Record<string, unknown>): PipelineDocument {
  return validPipeline({
    format: "keyflow.pipeline/v1",
    name,
    settings,
    nodes: [
      { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 50 } },
      { id: "byCard", type: "keyBy", params: { field: "card" } },
      { id: "vel", type: "velocity", params: { threshold: 2, windowMs: 60_000, mode: "eager" } },
      { id: "alerts", type: "sink.file", params: { path: "out/alerts.jsonl" } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "vel", to: "alerts" },
    ],
  });
}

/**
 * `n` lines over `cards` cards (with `malformedEvery`, a malformed one, a dead letter, that often).
 * Many cards, so that a card packed ahead is often not touched again before the next checkpoint;
 * long lines, so that the file source's reads make batches of hundreds of records, not thousands.
 */
export function longPayments(n: number, cards: number, malformedEvery?: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    lines.push(malformedEvery !== undefined && i % malformedEvery === 0 ? "{bad" : JSON.stringify({ id: `t${i}`, card: `c${(i * 7919) % cards}`, amount: i % 100, ts: 1767225600000 + i * 10, note: "x".repeat(600) }));
  }
  return lines.join("\n") + "\n";
}

/** A source that pauses `pauseMs` after each batch. */
export const paced =
  (pauseMs: number) =>
  (s: RecordSource): RecordSource =>
    Object.assign(Object.create(s) as RecordSource, {
      run: (emit: Parameters<RecordSource["run"]>[0], signal: AbortSignal) =>
        s.run(async (batch) => {
          await emit(batch);
          await new Promise((r) => setTimeout(r, pauseMs));
        }, signal),
    });
