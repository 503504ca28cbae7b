// Dry run: "what would this rule flag?" A draft pipeline runs in bounded mode through LocalJob on a
// sample (JSON lines given by the caller, or the last records of a Kafka topic) instead of its
// sources' real inputs, and nothing is written anywhere: sink records become the alerts, dead
// letters are listed, and every record on every output port is counted (the first ones kept), so
// the canvas can show a count on each node and port and a table of the records behind it.
//
// Per-port figures come from a tap on the job's routing: LocalJob sends every record a node emits
// (on any port, connected or not) through one private method, `route(node, port, value, ts, key)`;
// the tap wraps it on this instance only. Should the engine rename it, the dry run still runs and
// says that per-port records are unavailable (and dry-run.test.ts fails).
//
// process.custom runs as in a job (create.ts): in the runner's sandboxes, started only when the
// pipeline has such a node and closed when the run ends (returns or throws).
import { LocalJob, type JobEmission, type JsonObject, type JsonValue, type PipelineDocument } from "@keyflow/operators";
import { referenceOnlySources } from "./source-order";
import { createCustomFunctionFactory, type CustomFunctionFactoryOptions, type SandboxedFunctions } from "../sandbox/custom-function-factory";

export const DEFAULT_RECORD_LIMIT = 200;

/** A sample for one source node: its records as JSON lines. */
export interface DryRunInput {
  sourceNodeId: string;
  lines: readonly string[];
  /** Where the lines came from, for dead letters and the summary (`sample.jsonl`, `kafka:payments`). */
  label: string;
  /** The records' Kafka partitions and offsets, when they came from a topic (same order as lines). */
  origins?: readonly { partition: number; offset?: string; topic?: string }[];
}

export interface DryRunRecord {
  value: JsonValue;
  /** Event time, ms; null for a dead letter that has none. */
  timestamp: number | null;
  key?: string;
}

export interface DryRunPort {
  /** Every record emitted on the port (for a sink: every record it received, on `in`). */
  count: number;
  /** The first `recordLimit` of them. */
  records: DryRunRecord[];
}

export interface DryRunNode {
  type: string;
  recordsIn: number;
  recordsOut: number;
  late: number;
  deadLetters: number;
  keys: number;
  /** By port id: output ports (declared ones always listed); for sinks, `in`. */
  ports: Record<string, DryRunPort>;
}

/** A sample record that an alert's evidence points at. */
export interface DryRunEvidence {
  sourceNodeId: string;
  /** 1-based position in the sample given to that source. */
  line: number;
  ts: number;
  /** The id the alert quoted, when it quoted one. */
  id?: string | number;
  value: JsonObject;
}

export interface DryRunAlert {
  sinkNodeId: string;
  timestamp: number;
  key?: string;
  value: JsonObject;
  /** The sample records that caused it: the operator's `evidence.records` resolved, or the record itself. */
  evidence: DryRunEvidence[];
  /** `evidence.total` as the operator counted it (it quotes at most 50 records), or the evidence found. */
  evidenceTotal: number;
}

export interface DryRunDeadLetter {
  nodeId: string;
  port?: string;
  reason: string;
  raw?: string;
  value?: JsonValue;
  line?: number;
}

export interface DryRunResult {
  pipeline: string;
  durationMs: number;
  inputs: Record<string, { records: number; label: string }>;
  nodes: Record<string, DryRunNode>;
  alerts: { count: number; items: DryRunAlert[] };
  deadLetters: { count: number; items: DryRunDeadLetter[] };
  /** Things the analyst should know about this run (sources without a sample, truncated lists). */
  warnings: string[];
}

export interface DryRunOptions {
  /** Records kept per port, alerts and dead letters listed; default 200. */
  recordLimit?: number;
  /** The processing-time clock's value for the whole run; default Date.now(). */
  now?: number;
  /** process.custom's sandboxes (timeout, memory limit, logs), as for a job; the sandbox's defaults otherwise. */
  sandbox?: CustomFunctionFactoryOptions;
}

/** The source a single sample is meant for: the first source (document order) feeding a main input. */
export function primarySource(doc: PipelineDocument): string | undefined {
  const sources = doc.nodes.filter((n) => n.type.startsWith("source."));
  const refOnly = referenceOnlySources(doc);
  return (sources.find((n) => !refOnly.has(n.id)) ?? sources[0])?.id;
}

type RouteFn = (node: { id: string }, port: string, value: JsonObject, timestamp: number, key: string | undefined) => void;

/** Wraps LocalJob's private routing on one instance; false when the engine no longer has it. */
function installTap(job: LocalJob, listener: RouteFn): boolean {
  const target = job as unknown as { route?: unknown };
  const original = target.route;
  if (typeof original !== "function" || original.length !== 5) return false;
  const route = original as RouteFn;
  target.route = function tapped(this: unknown, node: { id: string }, port: string, value: JsonObject, timestamp: number, key: string | undefined) {
    listener(node, port, value, timestamp, key);
    route.call(this, node, port, value, timestamp, key);
  };
  return true;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** True when `id` is one of the record's scalar values, at the top level or one level down. */
function quotes(value: JsonObject, id: string | number): boolean {
  for (const v of Object.values(value)) {
    if (v === id) return true;
    if (isObject(v)) for (const w of Object.values(v)) if (w === id) return true;
  }
  return false;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

interface SourceEntry {
  sourceNodeId: string;
  line: number;
  ts: number;
  value: JsonObject;
}

/**
 * Runs `doc` (validated) on the inputs and returns what each node and port saw. Sources without an
 * input get none (their input ends at once). Rejects when the job cannot be created (an invalid
 * pipeline, an operator the runner cannot run, process.custom code that does not load). The
 * process.custom sandboxes it started are closed before it settles.
 */
export async function dryRun(doc: PipelineDocument, inputs: readonly DryRunInput[], opts: DryRunOptions = {}): Promise<DryRunResult> {
  const sandboxes: SandboxedFunctions | undefined = doc.nodes.some((n) => n.type === "process.custom") ? createCustomFunctionFactory(opts.sandbox ?? {}) : undefined;
  try {
    return runOnSample(doc, inputs, opts, sandboxes);
  } finally {
    await sandboxes?.close();
  }
}

function runOnSample(doc: PipelineDocument, inputs: readonly DryRunInput[], opts: DryRunOptions, sandboxes: SandboxedFunctions | undefined): DryRunResult {
  const started = performance.now();
  const limit = opts.recordLimit ?? DEFAULT_RECORD_LIMIT;
  const now = opts.now ?? Date.now();
  const job = LocalJob.create(doc, { processingTime: now, ...(sandboxes ? { operatorServices: { customFunctionFactory: sandboxes.factory } } : {}) });
  const warnings: string[] = [];
  const types = new Map(doc.nodes.map((n) => [n.id, n.type]));
  const sourceIds = new Set(job.sources.map((s) => s.nodeId));
  const sinkIds = new Set(job.sinks.map((s) => s.nodeId));

  // ---- per-port figures and the index of sample records (for evidence)
  const ports = new Map<string, Map<string, DryRunPort>>();
  const portOf = (nodeId: string, port: string): DryRunPort => {
    let byPort = ports.get(nodeId);
    if (!byPort) ports.set(nodeId, (byPort = new Map()));
    let p = byPort.get(port);
    if (!p) byPort.set(port, (p = { count: 0, records: [] }));
    return p;
  };
  const keep = (p: DryRunPort, value: JsonValue, timestamp: number | null, key: string | undefined) => {
    p.count++;
    if (p.records.length < limit) p.records.push(key === undefined ? { value, timestamp } : { value, timestamp, key });
  };
  const byTimestamp = new Map<number, SourceEntry[]>();
  let current: { sourceNodeId: string; line: number } | undefined;
  const tapped = installTap(job, (node, port, value, timestamp, key) => {
    keep(portOf(node.id, port), value, timestamp, key);
    if (current && node.id === current.sourceNodeId && port === "out") {
      const entry: SourceEntry = { sourceNodeId: current.sourceNodeId, line: current.line, ts: timestamp, value };
      const list = byTimestamp.get(timestamp);
      if (list) list.push(entry);
      else byTimestamp.set(timestamp, [entry]);
    }
  });
  if (!tapped) warnings.push("this engine version does not expose per-port records: only node totals are shown");

  // ---- alerts and dead letters
  const alerts: DryRunAlert[] = [];
  let alertCount = 0;
  const deadLetters: DryRunDeadLetter[] = [];
  let deadLetterCount = 0;

  const evidenceOf = (value: JsonObject, timestamp: number): { evidence: DryRunEvidence[]; total: number } => {
    const ev = value.evidence;
    if (isObject(ev) && Array.isArray(ev.records)) {
      const found: DryRunEvidence[] = [];
      for (const ref of ev.records) {
        if (!isObject(ref) || typeof ref.ts !== "number") continue;
        const id = typeof ref.id === "string" || typeof ref.id === "number" ? ref.id : undefined;
        const candidates = byTimestamp.get(ref.ts) ?? [];
        const matches = id === undefined ? candidates : candidates.filter((c) => quotes(c.value, id));
        for (const m of matches.slice(0, id === undefined ? 5 : 1)) {
          found.push({ sourceNodeId: m.sourceNodeId, line: m.line, ts: m.ts, ...(id !== undefined ? { id } : {}), value: m.value });
        }
      }
      return { evidence: found, total: typeof ev.total === "number" ? ev.total : found.length };
    }
    // No evidence attached: the alert is a sample record itself (a filter), or carries it as `event` / `record`.
    const candidates = byTimestamp.get(timestamp) ?? [];
    for (const probe of [value, value.event, value.record]) {
      if (!isObject(probe)) continue;
      const text = canonical(probe);
      const m = candidates.find((c) => canonical(c.value) === text);
      if (m) return { evidence: [{ sourceNodeId: m.sourceNodeId, line: m.line, ts: m.ts, value: m.value }], total: 1 };
    }
    return { evidence: [], total: 0 };
  };

  const collect = (emissions: readonly JobEmission[]) => {
    for (const e of emissions) {
      if (e.kind === "sink") {
        keep(portOf(e.nodeId, "in"), e.value, e.timestamp, e.key);
        alertCount++;
        if (alerts.length < limit) {
          const { evidence, total } = evidenceOf(e.value, e.timestamp);
          alerts.push({ sinkNodeId: e.nodeId, timestamp: e.timestamp, ...(e.key !== undefined ? { key: e.key } : {}), value: e.value, evidence, evidenceTotal: total });
        }
        continue;
      }
      deadLetterCount++;
      if (deadLetters.length < limit) {
        deadLetters.push({
          nodeId: e.nodeId,
          ...(e.port !== undefined ? { port: e.port } : {}),
          reason: e.reason,
          ...(e.raw !== undefined ? { raw: e.raw } : {}),
          ...(e.value !== undefined ? { value: e.value } : {}),
          ...(e.origin?.line !== undefined ? { line: e.origin.line } : {}),
        });
      }
    }
  };

  // ---- replay: reference-only sources first (a broadcast table is loaded before the payments that need it)
  const refOnly = referenceOnlySources(doc);
  const ordered = [...inputs].sort((a, b) => Number(refOnly.has(b.sourceNodeId)) - Number(refOnly.has(a.sourceNodeId)));
  const inputSummary: DryRunResult["inputs"] = {};
  for (const input of ordered) {
    if (!sourceIds.has(input.sourceNodeId)) throw new Error(`node "${input.sourceNodeId}" is not a source of pipeline "${doc.name}" (sources: ${[...sourceIds].join(", ")})`);
    let pushed = 0;
    input.lines.forEach((raw, i) => {
      const line = raw.trim();
      if (line === "") return;
      current = { sourceNodeId: input.sourceNodeId, line: i + 1 };
      const o = input.origins?.[i];
      job.pushRaw(input.sourceNodeId, line, o ? { ...o } : { partition: 0, path: input.label, line: i + 1 });
      pushed++;
      if (pushed % 1_000 === 0) collect(job.drain());
    });
    current = undefined;
    collect(job.drain());
    inputSummary[input.sourceNodeId] = { records: pushed, label: input.label };
  }
  for (const id of sourceIds) {
    if (!inputSummary[id]) {
      inputSummary[id] = { records: 0, label: "no sample" };
      warnings.push(`source "${id}" was given no sample: its input was empty`);
    }
  }
  for (const id of sourceIds) job.endOfInput(id);
  job.advanceProcessingTime(now);
  collect(job.drain());

  // ---- per node
  const metrics = job.metrics();
  const nodes: Record<string, DryRunNode> = {};
  for (const [id, m] of Object.entries(metrics)) {
    const declared = sinkIds.has(id) ? ["in"] : (job.node(id)?.spec.outputs.map((p) => p.id) ?? []);
    const byPort: Record<string, DryRunPort> = {};
    for (const p of declared) byPort[p] = { count: 0, records: [] };
    for (const [p, figures] of ports.get(id) ?? []) byPort[p] = figures;
    nodes[id] = { type: types.get(id) ?? "?", recordsIn: m.recordsIn, recordsOut: m.recordsOut, late: m.late, deadLetters: m.deadLetters, keys: m.keys, ports: byPort };
  }
  if (alertCount > alerts.length) warnings.push(`${alertCount} records reached the sinks; the first ${alerts.length} are listed`);
  if (deadLetterCount > deadLetters.length) warnings.push(`${deadLetterCount} dead letters; the first ${deadLetters.length} are listed`);

  return {
    pipeline: doc.name,
    durationMs: Math.round(performance.now() - started),
    inputs: inputSummary,
    nodes,
    alerts: { count: alertCount, items: alerts },
    deadLetters: { count: deadLetterCount, items: deadLetters },
    warnings,
  };
}
