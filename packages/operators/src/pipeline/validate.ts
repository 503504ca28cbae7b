// THE pipeline validator, shared by the canvas (on every edit), the API (before saving and
// deploying) and the CLI (`keyflow run`). It reads only the catalog's specs, and reports every
// problem at once, each naming its node, param or edge and the likely mistake. Errors block a
// deploy; warnings carry the seeds' state pitfalls (unbounded keys, TTL shorter than the window,
// late data dropped, hot keys). It also resolves the kind of stream on each port, so the canvas
// can refuse a bad connection while the user drags it (canConnect).
import type { z } from "zod";
import { catalog } from "../catalog";
import type { OperatorSpec, StateRetention, StreamKind } from "../core/spec";
import { closestName } from "../expr/cel";
import { PIPELINE_FORMAT, parseEdgeEnd, pipelineDocumentSchema, type PipelineDocument } from "./document";
import { formatDuration } from "./durations";
import { deadLetterOutput, describeOutput, outputKey, relativePathInFolder, sinkOutput } from "./outputs";

// ---- Which operators exist ------------------------------------------------------------------

export interface ValidateOptions {
  /** The operators to validate against; default: the catalog. Tests and previews pass their own. */
  specs?: readonly OperatorSpec[];
  /**
   * Leave out the check that file params are relative paths inside the data folder: the engine
   * (LocalJob opens no file) and `keyflow run --allow-paths DIR`, where the runner confines paths itself.
   */
  anyFilePaths?: boolean;
  /**
   * Leave out the one-writer-per-output check: the engine, and a rule job's composed pipeline, whose
   * versions' sinks share their outputs through the job's routing (each version is checked alone).
   */
  sharedOutputs?: boolean;
}

interface Registry {
  get(type: string): OperatorSpec | undefined;
  types: readonly string[];
  ofCategory(category: OperatorSpec["category"]): string[];
}

const registries = new WeakMap<readonly OperatorSpec[], Registry>();
function registryOf(opts: ValidateOptions | undefined): Registry {
  const specs: readonly OperatorSpec[] = opts?.specs ?? catalog;
  let r = registries.get(specs);
  if (!r) {
    const byType = new Map(specs.map((s) => [s.type, s]));
    r = { get: (t) => byType.get(t), types: specs.map((s) => s.type), ofCategory: (c) => specs.filter((s) => s.category === c).map((s) => s.type) };
    registries.set(specs, r);
  }
  return r;
}

// ---- Results --------------------------------------------------------------------------------

export type IssueSeverity = "error" | "warning";

export interface Issue {
  severity: IssueSeverity;
  /** Stable id of the rule, for the editor and tests: `bad-param`, `cycle`, `hot-key`, ... */
  code: string;
  nodeId?: string;
  /** Dotted param path within the node, e.g. `windowMs` or `assignments.risk`. */
  param?: string;
  /** The edge as written, `from -> to`. */
  edge?: string;
  /** The whole message, naming the node/param/edge: `node "vel": param "windowMs" must be ...`. */
  message: string;
}

export interface ValidationResult {
  /** True when there is no error (warnings allowed). */
  ok: boolean;
  /** The document with settings defaults filled in; present whenever its shape is valid. */
  document?: PipelineDocument;
  /** Params as each spec parsed them (defaults filled, durations in ms), by node id, for nodes whose params are valid. */
  params: Record<string, unknown>;
  /** Fields known on each node's main input (from sources' declared `fields`), for expression completion. */
  inputFields: Record<string, readonly string[]>;
  issues: Issue[];
}

/** One line for the CLI: `error: node "vel": param "windowMs" must be a positive duration`. */
export function formatIssue(issue: Issue): string {
  return `${issue.severity}: ${issue.message}`;
}

// ---- Phrasing zod issues --------------------------------------------------------------------

type ZodIssue = z.core.$ZodIssue;

function show(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? "nothing" : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = root;
  for (const k of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

const TYPE_NAMES: Record<string, string> = {
  number: "a number",
  int: "a whole number",
  string: "text (a string)",
  boolean: "true or false",
  array: "a list",
  object: "an object",
  record: "an object",
  bigint: "a whole number",
};

/** Our own schema messages are phrased to follow the subject ("must be ...", "set either ..."). */
const isOwnPhrase = (message: string) => /^(must|set|is|has|needs) /.test(message);

function bound(kind: "min" | "max", origin: string, limit: number | bigint, inclusive: boolean): string {
  if (origin === "string") return kind === "min" ? (limit === 1 ? "must not be empty" : `must have at least ${limit} characters`) : `must have at most ${limit} characters`;
  if (origin === "array" || origin === "set") return kind === "min" ? (limit === 1 ? "must list at least one item" : `must list at least ${limit} items`) : `must list at most ${limit} items`;
  if (kind === "min" && Number(limit) === 0 && !inclusive) return "must be positive";
  return `must be ${kind === "min" ? (inclusive ? "≥" : ">") : inclusive ? "≤" : "<"} ${limit}`;
}

/** The predicate part of a zod issue: "must be a number, got "5"", "is required", ... */
function phraseZodIssue(issue: ZodIssue, value: unknown): string {
  const got = `, got ${show(value)}`;
  switch (issue.code) {
    case "invalid_type":
      if (value === undefined) return "is required";
      if (isOwnPhrase(issue.message)) return issue.message + got;
      return `must be ${TYPE_NAMES[issue.expected] ?? issue.expected}${got}`;
    case "too_small":
      if (isOwnPhrase(issue.message)) return issue.message + got;
      return bound("min", issue.origin, issue.minimum, issue.inclusive ?? true) + got;
    case "too_big":
      if (isOwnPhrase(issue.message)) return issue.message + got;
      return bound("max", issue.origin, issue.maximum, issue.inclusive ?? true) + got;
    case "invalid_value":
      if (isOwnPhrase(issue.message)) return issue.message + got;
      return issue.values.length === 1 ? `must be ${show(issue.values[0])}${got}` : `must be one of ${issue.values.map(show).join(", ")}${got}`;
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}${got}`;
    case "invalid_format":
      return isOwnPhrase(issue.message) ? issue.message + got : `is invalid (${issue.message})${got}`;
    default:
      // custom checks (durations, time zones, refinements) and unions carry our own wording
      if (isOwnPhrase(issue.message)) return issue.message.includes(", got ") || value === undefined ? issue.message : issue.message + got;
      return `is invalid: ${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`;
  }
}

const dotted = (path: readonly PropertyKey[]) => path.map(String).join(".");

/** Issues for one node's params, each `node "x": param "p" <predicate>`. */
function paramIssues(nodeId: string, spec: OperatorSpec, raw: unknown, error: z.ZodError): Issue[] {
  const known = objectKeys(spec.params);
  return error.issues.flatMap((issue): Issue[] => {
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => {
        const param = dotted([...issue.path, key]);
        const near = issue.path.length === 0 ? closestName(key, known) : undefined;
        const hint = near ? ` — did you mean "${near}"?` : issue.path.length === 0 ? ` (its params: ${known.join(", ") || "none"})` : "";
        return { severity: "error", code: "unknown-param", nodeId, param, message: `node "${nodeId}": param "${param}" is not a param of ${spec.type}${hint}` };
      });
    }
    const value = valueAt(raw, issue.path);
    if (issue.path.length === 0) {
      return [{ severity: "error", code: "bad-param", nodeId, message: `node "${nodeId}": ${isOwnPhrase(issue.message) ? issue.message : phraseZodIssue(issue, value)}` }];
    }
    const param = dotted(issue.path);
    return [{ severity: "error", code: "bad-param", nodeId, param, message: `node "${nodeId}": param "${param}" ${phraseZodIssue(issue, value)}` }];
  });
}

/** Top-level keys of an object schema (through default/optional/pipe wrappers). */
function objectKeys(schema: z.ZodType): string[] {
  let def: unknown = (schema as { _zod?: { def?: unknown } })._zod?.def;
  for (let i = 0; i < 10 && def !== null && typeof def === "object"; i++) {
    const d = def as { type?: string; shape?: Record<string, unknown>; innerType?: { _zod: { def: unknown } }; in?: { _zod: { def: unknown } } };
    if (d.type === "object" && d.shape) return Object.keys(d.shape);
    def = d.innerType?._zod.def ?? d.in?._zod.def;
  }
  return [];
}

/** Issues for a document whose shape is wrong (not JSON of the format, a node without a type, ...). */
function shapeIssues(raw: unknown, error: z.ZodError): Issue[] {
  return error.issues.flatMap((issue): Issue[] => {
    const path = issue.path;
    const value = valueAt(raw, path);
    const keys = issue.code === "unrecognized_keys" ? issue.keys : [undefined];
    return keys.map((extraKey) => {
      const base: Pick<Issue, "severity" | "code"> = { severity: "error", code: "bad-document" };
      const predicate = extraKey !== undefined ? "is not a field of the document here" : phraseZodIssue(issue, value);
      const field = (p: readonly PropertyKey[]) => (extraKey !== undefined ? [...p, extraKey] : p);
      if (path[0] === "nodes" && typeof path[1] === "number") {
        const id = valueAt(raw, ["nodes", path[1], "id"]);
        const rest = field(path.slice(2));
        const who = typeof id === "string" && id !== "" ? `node "${id}"` : `node #${path[1] + 1}`;
        return { ...base, ...(typeof id === "string" ? { nodeId: id } : {}), message: rest.length ? `${who}: "${dotted(rest)}" ${predicate}` : `${who} ${predicate}` };
      }
      if (path[0] === "edges" && typeof path[1] === "number") {
        const e = valueAt(raw, ["edges", path[1]]) as { from?: unknown; to?: unknown } | undefined;
        const label = typeof e?.from === "string" && typeof e.to === "string" ? `${e.from} -> ${e.to}` : `#${path[1] + 1}`;
        const rest = field(path.slice(2));
        return { ...base, edge: label, message: rest.length ? `edge "${label}": "${dotted(rest)}" ${predicate}` : `edge "${label}" ${predicate}` };
      }
      if (path[0] === "settings") {
        const rest = field(path.slice(1));
        return { ...base, param: `settings.${dotted(rest)}`, message: rest.length ? `settings: "${dotted(rest)}" ${predicate}` : `settings ${predicate}` };
      }
      if (path.length === 0 && extraKey === undefined) {
        return { ...base, message: `pipeline: must be a ${PIPELINE_FORMAT} JSON object, got ${show(raw)}` };
      }
      const p = field(path);
      if (dotted(p) === "format") {
        return { ...base, message: `pipeline: "format" must be "${PIPELINE_FORMAT}"${value === undefined ? " (it is missing: is this a Keyflow pipeline file?)" : `, got ${show(value)}`}` };
      }
      return { ...base, message: `pipeline: "${dotted(p)}" ${predicate}` };
    });
  });
}

// ---- The graph --------------------------------------------------------------------------------

/** The smallest graph the canvas, the API and the CLI all have: node ids and types, and edges. */
export interface GraphLike {
  nodes: readonly { id: string; type: string; params?: Record<string, unknown> }[];
  edges?: readonly { from: string; to: string }[];
}

interface Endpoint {
  nodeId: string;
  port: string;
  /** The port was written explicitly (`vel:late`). */
  explicit: boolean;
}

interface Edge {
  from: Endpoint;
  to: Endpoint;
  label: string;
}

const MAIN_OUT = "out";
const MAIN_IN = "in";

function endpoint(end: string, side: "from" | "to"): Endpoint {
  const { nodeId, port } = parseEdgeEnd(end);
  return { nodeId, port: port ?? (side === "from" ? MAIN_OUT : MAIN_IN), explicit: port !== undefined };
}

/** Edges whose nodes and ports exist, in document order, with the issues of those that don't. */
function resolveEdges(graph: GraphLike, specs: ReadonlyMap<string, OperatorSpec | undefined>): { edges: Edge[]; issues: Issue[] } {
  const edges: Edge[] = [];
  const issues: Issue[] = [];
  const ids = [...specs.keys()];
  const seen = new Set<string>();
  for (const raw of graph.edges ?? []) {
    const label = `${raw.from} -> ${raw.to}`;
    const from = endpoint(raw.from, "from");
    const to = endpoint(raw.to, "to");
    let ok = true;
    for (const [end, role] of [
      [from, "from"],
      [to, "to"],
    ] as const) {
      if (!specs.has(end.nodeId)) {
        const near = closestName(end.nodeId, ids);
        issues.push({
          severity: "error",
          code: "edge-unknown-node",
          edge: label,
          message: `edge "${label}": node "${end.nodeId}" does not exist${near ? ` — did you mean "${near}"?` : ""}`,
        });
        ok = false;
        continue;
      }
      const spec = specs.get(end.nodeId);
      if (!spec) {
        ok = false; // unknown type, already reported on the node
        continue;
      }
      const ports = role === "from" ? spec.outputs.map((p) => p.id) : spec.inputs.map((p) => p.id);
      if (!ports.includes(end.port)) {
        issues.push({ severity: "error", code: "edge-unknown-port", nodeId: end.nodeId, edge: label, message: missingPortMessage(label, end, role, spec, ports) });
        ok = false;
      }
    }
    if (from.nodeId === to.nodeId && specs.has(from.nodeId)) {
      issues.push({ severity: "error", code: "cycle", nodeId: from.nodeId, edge: label, message: `edge "${label}": node "${from.nodeId}" is connected to itself — a pipeline must not loop back` });
      ok = false;
    }
    if (!ok) continue;
    const identity = `${from.nodeId}:${from.port}->${to.nodeId}:${to.port}`;
    if (seen.has(identity)) {
      issues.push({ severity: "warning", code: "duplicate-edge", nodeId: to.nodeId, edge: label, message: `edge "${label}" is listed twice; each record would arrive twice — remove one` });
      continue;
    }
    seen.add(identity);
    edges.push({ from, to, label });
  }
  return { edges, issues };
}

function missingPortMessage(label: string, end: Endpoint, role: "from" | "to", spec: OperatorSpec, ports: readonly string[]): string {
  const head = `edge "${label}": node "${end.nodeId}" (${spec.type})`;
  if (role === "from") {
    if (ports.length === 0) return `${head} has no outputs — a sink ends the pipeline, so nothing can start from it`;
    const near = closestName(end.port, ports);
    return `${head} has no output port "${end.port}"${near && near !== end.port ? ` — did you mean "${end.nodeId}:${near}"?` : ""} (its outputs: ${ports.join(", ")})`;
  }
  if (ports.length === 0) return `${head} has no inputs — a source starts the pipeline, so nothing can flow into it`;
  const near = closestName(end.port, ports);
  return `${head} has no input port "${end.port}"${near && near !== end.port ? ` — did you mean "${end.nodeId}:${near}"?` : ""} (its inputs: ${ports.join(", ")})`;
}

// ---- Stream kinds -----------------------------------------------------------------------------

/** The kind of records on each output port of each node, keyed by node id then port id. */
export type PortKinds = Record<string, Record<string, StreamKind>>;

function computePortKinds(nodeIds: readonly string[], specs: ReadonlyMap<string, OperatorSpec | undefined>, edges: readonly Edge[]): PortKinds {
  const incoming = new Map<string, Edge[]>();
  for (const e of edges) incoming.set(e.to.nodeId, [...(incoming.get(e.to.nodeId) ?? []), e]);
  const result: PortKinds = {};
  const inProgress = new Set<string>();

  const outputKind = (nodeId: string, port: string): StreamKind | undefined => resolve(nodeId)[port];

  function mainInputKind(nodeId: string): StreamKind | undefined {
    const kinds = (incoming.get(nodeId) ?? []).filter((e) => e.to.port === MAIN_IN).map((e) => outputKind(e.from.nodeId, e.from.port));
    if (kinds.length === 0 || kinds.some((k) => k === undefined)) return undefined;
    // Several streams into one input merge; they stay keyed only if all of them are keyed.
    return kinds.every((k) => k === kinds[0]) ? kinds[0] : "stream";
  }

  function resolve(nodeId: string): Record<string, StreamKind> {
    const done = result[nodeId];
    if (done) return done;
    if (inProgress.has(nodeId)) return {}; // a cycle: reported elsewhere; kinds stay unknown
    inProgress.add(nodeId);
    const spec = specs.get(nodeId);
    const kinds: Record<string, StreamKind> = {};
    if (spec) {
      const same = spec.outputs.some((p) => p.kind === "same") ? mainInputKind(nodeId) : undefined;
      for (const port of spec.outputs) {
        const kind = port.kind === "same" ? same : port.kind;
        if (kind) kinds[port.id] = kind;
      }
    }
    inProgress.delete(nodeId);
    result[nodeId] = kinds;
    return kinds;
  }

  for (const id of nodeIds) resolve(id);
  return result;
}

function specsOf(graph: GraphLike, registry: Registry): Map<string, OperatorSpec | undefined> {
  const specs = new Map<string, OperatorSpec | undefined>();
  for (const n of graph.nodes) if (!specs.has(n.id)) specs.set(n.id, registry.get(n.type));
  return specs;
}

/**
 * The kind of stream on every output port of every node (`keyed` after a keyBy, `same` resolved
 * through filters and maps). Ports whose kind depends on an unconnected input are left out.
 */
export function resolvePortKinds(graph: GraphLike, opts?: ValidateOptions): PortKinds {
  const specs = specsOf(graph, registryOf(opts));
  const { edges } = resolveEdges(graph, specs);
  return computePortKinds([...specs.keys()], specs, edges);
}

const KIND_NAMES: Record<StreamKind, string> = { stream: "an unkeyed stream", keyed: "a keyed stream", reference: "a reference stream" };

/** Why `kind` may not flow into `port` of `spec` (node `nodeId`), or undefined when it may. */
function kindMismatch(nodeId: string, spec: OperatorSpec, port: string, kind: StreamKind, fromNodeId: string): { code: string; message: string } | undefined {
  const input = spec.inputs.find((p) => p.id === port);
  if (!input) return undefined;
  if (port === MAIN_IN && spec.requiresKeyedInput && kind !== "keyed") {
    return { code: "needs-keyed-input", message: `node "${nodeId}": ${spec.type} needs a keyed input — add a keyBy before it` };
  }
  if (!input.accepts.includes(kind)) {
    const accepted = input.accepts.map((k) => KIND_NAMES[k]).join(" or ");
    return { code: "wrong-input-kind", message: `node "${nodeId}": input "${port}" takes ${accepted}, but "${fromNodeId}" sends ${KIND_NAMES[kind]}` };
  }
  return undefined;
}

export type ConnectResult = { ok: true } | { ok: false; reason: string };

/**
 * Whether an edge `from -> to` (edge ends as in the document: `node` or `node:port`) may be
 * added to `graph`: both ports exist, the stream kind fits, the input is free (or takes several
 * streams), and no cycle forms. The canvas calls it while the user drags a connection.
 */
export function canConnect(graph: GraphLike, from: string, to: string, opts?: ValidateOptions): ConnectResult {
  const specs = specsOf(graph, registryOf(opts));
  const a = endpoint(from, "from");
  const b = endpoint(to, "to");
  const fromSpec = specs.get(a.nodeId);
  const toSpec = specs.get(b.nodeId);
  if (!specs.has(a.nodeId)) return { ok: false, reason: `node "${a.nodeId}" does not exist` };
  if (!specs.has(b.nodeId)) return { ok: false, reason: `node "${b.nodeId}" does not exist` };
  if (!fromSpec || !toSpec) return { ok: false, reason: `node "${fromSpec ? b.nodeId : a.nodeId}" has an unknown operator type` };
  if (a.nodeId === b.nodeId) return { ok: false, reason: `node "${a.nodeId}" cannot be connected to itself` };
  const label = `${from} -> ${to}`;
  if (!fromSpec.outputs.some((p) => p.id === a.port)) return { ok: false, reason: missingPortMessage(label, a, "from", fromSpec, fromSpec.outputs.map((p) => p.id)) };
  const input = toSpec.inputs.find((p) => p.id === b.port);
  if (!input) return { ok: false, reason: missingPortMessage(label, b, "to", toSpec, toSpec.inputs.map((p) => p.id)) };

  const { edges } = resolveEdges(graph, specs);
  if (edges.some((e) => e.from.nodeId === a.nodeId && e.from.port === a.port && e.to.nodeId === b.nodeId && e.to.port === b.port)) {
    return { ok: false, reason: `"${from}" is already connected to "${to}"` };
  }
  if (!input.multiple) {
    const taken = edges.find((e) => e.to.nodeId === b.nodeId && e.to.port === b.port);
    if (taken) return { ok: false, reason: `input "${b.port}" of node "${b.nodeId}" already takes a stream from "${taken.from.nodeId}" — merge streams with a union first` };
  }
  const kind = computePortKinds([...specs.keys()], specs, edges)[a.nodeId]?.[a.port];
  if (kind) {
    const mismatch = kindMismatch(b.nodeId, toSpec, b.port, kind, a.nodeId);
    if (mismatch) return { ok: false, reason: mismatch.message };
  }
  // A path to → ... → from would close a loop.
  const successors = adjacency(edges);
  const stack = [b.nodeId];
  const visited = new Set<string>();
  while (stack.length) {
    const n = stack.pop() as string;
    if (n === a.nodeId) return { ok: false, reason: `connecting "${a.nodeId}" to "${b.nodeId}" would make a cycle — a pipeline must not loop back` };
    if (visited.has(n)) continue;
    visited.add(n);
    stack.push(...(successors.get(n) ?? []));
  }
  return { ok: true };
}

function adjacency(edges: readonly Edge[]): Map<string, string[]> {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    const list = next.get(e.from.nodeId) ?? [];
    if (!list.includes(e.to.nodeId)) list.push(e.to.nodeId);
    next.set(e.from.nodeId, list);
  }
  return next;
}

// ---- Cycles -----------------------------------------------------------------------------------

/** Each cycle once, as the nodes along it (Tarjan's strongly connected components, then a path). */
function findCycles(nodeIds: readonly string[], edges: readonly Edge[]): string[][] {
  const next = adjacency(edges);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;

  // Iterative Tarjan, so a long chain of nodes cannot overflow the call stack.
  for (const root of nodeIds) {
    if (index.has(root)) continue;
    const work: { node: string; i: number }[] = [{ node: root, i: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length) {
      const frame = work[work.length - 1] as { node: string; i: number };
      const succ = next.get(frame.node) ?? [];
      if (frame.i < succ.length) {
        const w = succ[frame.i++] as string;
        if (!index.has(w)) {
          index.set(w, counter);
          low.set(w, counter++);
          stack.push(w);
          onStack.add(w);
          work.push({ node: w, i: 0 });
        } else if (onStack.has(w)) {
          low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(w) as number));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop() as string;
          onStack.delete(w);
          component.push(w);
        } while (w !== frame.node);
        if (component.length > 1) components.push(component);
      }
    }
  }

  const order = new Map(nodeIds.map((id, i) => [id, i]));
  return components.map((component) => {
    const members = new Set(component);
    const start = [...component].sort((x, y) => (order.get(x) ?? 0) - (order.get(y) ?? 0))[0] as string;
    // Shortest way back to start inside the component (BFS), for a readable message.
    const prev = new Map<string, string>();
    const queue = [start];
    const seen = new Set([start]);
    while (queue.length) {
      const n = queue.shift() as string;
      for (const w of next.get(n) ?? []) {
        if (!members.has(w)) continue;
        if (w === start) {
          const path = [n];
          while (path[0] !== start) path.unshift(prev.get(path[0] as string) as string);
          return path;
        }
        if (!seen.has(w)) {
          seen.add(w);
          prev.set(w, n);
          queue.push(w);
        }
      }
    }
    return component;
  });
}

// ---- State pitfalls (warnings) ------------------------------------------------------------------

const normalizeField = (f: string) => f.toLowerCase().replace(/[_\-.]/g, "");

/** Field names that are, in payment data, almost always unique per record or per session. */
const UNBOUNDED_KEY_FIELDS = new Set(["id", "txid", "txnid", "transactionid", "eventid", "uuid", "guid", "requestid", "messageid", "paymentid", "orderid", "traceid", "sessionid", "correlationid"]);
/** Field names with a handful of values: every record of the stream lands on a few keys. */
const LOW_CARDINALITY_FIELDS = new Set(["country", "countrycode", "cardcountry", "currency", "merchantcategory", "mcc", "channel", "status", "type", "eventtype", "region", "cardtype", "scheme", "cardscheme", "brand", "category", "isfraud", "gender", "bank"]);

const numberParam = (params: unknown, name: string): number | undefined => {
  const v = valueAt(params, [name]);
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
};

/** The spec's own declaration, or what the catalog's param names say. */
function retentionOf(spec: OperatorSpec, params: unknown): StateRetention {
  if (spec.stateRetention) return spec.stateRetention(params);
  const ttlParam = ["ttlMs", "stateTtlMs"].find((p) => numberParam(params, p) !== undefined);
  const windowParam = ["windowMs", "sizeMs"].find((p) => numberParam(params, p) !== undefined);
  const timed = ["windowMs", "sizeMs", "gapMs", "afterMs", "deadlineMs"].some((p) => numberParam(params, p) !== undefined);
  return {
    ...(ttlParam ? { ttlMs: numberParam(params, ttlParam) as number, ttlParam } : {}),
    ...(windowParam ? { windowMs: numberParam(params, windowParam) as number } : {}),
    freedByTimers: spec.category === "window" || timed,
  };
}

// ---- validatePipeline ---------------------------------------------------------------------------

/**
 * Validates a pipeline document (any JSON): its shape, every node's type and params, the edges,
 * stream kinds, cycles, sources and sinks, fields used by expressions, and the state pitfalls.
 */
export function validatePipeline(doc: unknown, opts?: ValidateOptions): ValidationResult {
  const registry = registryOf(opts);
  const shape = pipelineDocumentSchema.safeParse(doc);
  if (!shape.success) return { ok: false, params: {}, inputFields: {}, issues: shapeIssues(doc, shape.error) };
  const document = shape.data;
  const issues: Issue[] = [];
  const params: Record<string, unknown> = {};

  // -- settings
  const { parallelism, maxParallelism } = document.settings;
  if (parallelism > maxParallelism) {
    issues.push({ severity: "error", code: "bad-settings", param: "settings.parallelism", message: `settings: "parallelism" (${parallelism}) must not exceed "maxParallelism" (${maxParallelism}), the number of key groups` });
  }

  // -- nodes: ids, types, versions, params
  const specs = new Map<string, OperatorSpec | undefined>();
  const nodeIds: string[] = [];
  const counts = new Map<string, number>();
  for (const node of document.nodes) counts.set(node.id, (counts.get(node.id) ?? 0) + 1);
  for (const node of document.nodes) {
    if (specs.has(node.id)) continue;
    nodeIds.push(node.id);
    const count = counts.get(node.id) ?? 1;
    if (count > 1) {
      issues.push({ severity: "error", code: "duplicate-node-id", nodeId: node.id, message: `node "${node.id}": ${count} nodes have this id — node ids must be unique (they name each node's state in checkpoints)` });
    }
    const spec = registry.get(node.type);
    specs.set(node.id, spec);
    if (!spec) {
      issues.push({ severity: "error", code: "unknown-operator-type", nodeId: node.id, message: `node "${node.id}": unknown operator type "${node.type}"${typeHint(node.type, registry.types)}` });
      continue;
    }
    let raw: Record<string, unknown> = node.params;
    if (node.version !== undefined && node.version > spec.version) {
      issues.push({ severity: "error", code: "unsupported-version", nodeId: node.id, message: `node "${node.id}": written for ${spec.type} version ${node.version}, but this Keyflow knows version ${spec.version} — upgrade Keyflow or re-create the node` });
      continue;
    }
    if (node.version !== undefined && node.version < spec.version && spec.migrate) raw = spec.migrate(raw, node.version);
    const parsed = spec.params.safeParse(raw);
    if (parsed.success) params[node.id] = parsed.data;
    else issues.push(...paramIssues(node.id, spec, raw, parsed.error));
  }

  // -- files inside the data folder, one writer per output
  issues.push(...fileAndOutputIssues(document, specs, params, opts));

  // -- edges and ports
  const { edges, issues: edgeIssues } = resolveEdges(document, specs);
  issues.push(...edgeIssues);
  const incoming = new Map<string, Edge[]>();
  const outgoing = new Map<string, Edge[]>();
  for (const e of edges) {
    incoming.set(e.to.nodeId, [...(incoming.get(e.to.nodeId) ?? []), e]);
    outgoing.set(e.from.nodeId, [...(outgoing.get(e.from.nodeId) ?? []), e]);
  }
  // Edges that name existing nodes, valid or not: a node with only broken edges is not "unconnected".
  const touched = new Set<string>();
  for (const e of document.edges) for (const end of [e.from, e.to]) touched.add(parseEdgeEnd(end).nodeId);
  // Inputs that some edge feeds, valid or not: a broken edge is reported once, at the edge, not
  // again as "input not connected" at the node it was meant to feed.
  const namedInputs = new Set<string>();
  for (const e of document.edges) {
    const to = parseEdgeEnd(e.to);
    namedInputs.add(`${to.nodeId}:${to.port ?? MAIN_IN}`);
  }

  // -- cycles
  const cycles = findCycles(nodeIds, edges);
  for (const cycle of cycles) {
    const path = [...cycle, cycle[0]].map((n) => `"${n}"`).join(" → ");
    issues.push({ severity: "error", code: "cycle", nodeId: cycle[0], message: `cycle: ${path} — a pipeline must not loop back; remove one of these edges` });
  }

  // -- inputs: count, kinds
  const kinds = computePortKinds(nodeIds, specs, edges);
  for (const id of nodeIds) {
    const spec = specs.get(id);
    if (!spec) continue;
    const into = incoming.get(id) ?? [];
    const isolated = spec.category !== "source" && !touched.has(id);
    for (const port of spec.inputs) {
      const feeding = into.filter((e) => e.to.port === port.id);
      if (feeding.length === 0 && port.required && !isolated && !namedInputs.has(`${id}:${port.id}`)) {
        const what = port.id === MAIN_IN ? "its input" : `its input "${port.id}"`;
        issues.push({ severity: "error", code: "missing-input", nodeId: id, message: `node "${id}": ${what} is not connected — connect ${port.id === MAIN_IN ? "a stream" : `${port.label} (edge to "${id}:${port.id}")`} to it` });
      }
      if (feeding.length > 1 && !port.multiple) {
        issues.push({
          severity: "error",
          code: "too-many-inputs",
          nodeId: id,
          message: `node "${id}": input "${port.id}" takes one stream, but ${feeding.length} are connected (from ${feeding.map((e) => `"${e.from.nodeId}"`).join(", ")}) — merge them with a union first`,
        });
      }
      for (const e of feeding) {
        const kind = kinds[e.from.nodeId]?.[e.from.port];
        const mismatch = kind ? kindMismatch(id, spec, port.id, kind, e.from.nodeId) : undefined;
        if (mismatch) issues.push({ severity: "error", code: mismatch.code, nodeId: id, edge: e.label, message: mismatch.message });
      }
    }
  }

  // -- sources, sinks, connectivity
  const categoryOf = (id: string) => specs.get(id)?.category;
  if (!nodeIds.some((id) => categoryOf(id) === "source")) {
    issues.push({ severity: "error", code: "no-source", message: `pipeline: it has no source — add one (${registry.ofCategory("source").join(", ")}) so records flow in` });
  }
  if (!nodeIds.some((id) => categoryOf(id) === "sink")) {
    issues.push({ severity: "error", code: "no-sink", message: `pipeline: it has no sink — add one (${registry.ofCategory("sink").join(", ")}) so results go somewhere` });
  }
  for (const id of nodeIds) {
    const spec = specs.get(id);
    if (!spec) continue;
    if (!touched.has(id)) {
      issues.push({ severity: "error", code: "not-connected", nodeId: id, message: `node "${id}": it is not connected to anything — connect it or delete it` });
      continue;
    }
    const mainOut = spec.outputs.find((p) => !p.side);
    if (mainOut && !(outgoing.get(id) ?? []).some((e) => e.from.port === mainOut.id)) {
      issues.push({ severity: "warning", code: "output-unconnected", nodeId: id, message: `node "${id}": its output is not connected, so its results go nowhere — connect it to a sink or another node` });
    }
  }

  // -- params against the graph: fields, spec checks
  const fields = propagateFields(nodeIds, specs, params, incoming, cycles.length > 0);
  for (const id of nodeIds) {
    const spec = specs.get(id);
    if (!spec?.check || !(id in params)) continue;
    for (const p of spec.check(params[id], { nodeId: id, ...(fields.input.get(id) ? { inputFields: fields.input.get(id) } : {}) })) {
      issues.push({
        severity: p.severity,
        code: p.code ?? "param-check",
        nodeId: id,
        ...(p.param !== undefined ? { param: p.param } : {}),
        message: p.param !== undefined ? `node "${id}": param "${p.param}": ${p.message}` : `node "${id}": ${p.message}`,
      });
    }
  }

  // -- two-stage aggregation: each window.combine against its partial stage
  issues.push(...combineIssues(nodeIds, specs, params, incoming));

  // -- the seeds' state pitfalls
  issues.push(...statePitfalls(nodeIds, specs, params, outgoing, kinds));

  const inputFields: Record<string, readonly string[]> = {};
  for (const [id, f] of fields.input) if (f) inputFields[id] = f;
  return { ok: !issues.some((i) => i.severity === "error"), document, params, inputFields, issues };
}

/** File params outside the data folder, and two writers of one output (two sinks, or a sink and the dead letters). */
function fileAndOutputIssues(doc: PipelineDocument, specs: ReadonlyMap<string, OperatorSpec | undefined>, params: Record<string, unknown>, opts: ValidateOptions | undefined): Issue[] {
  const issues: Issue[] = [];
  if (!opts?.anyFilePaths) {
    for (const [id, spec] of specs) {
      for (const param of spec?.filePaths ?? []) {
        const value = (params[id] as Record<string, unknown> | undefined)?.[param];
        if (typeof value !== "string") continue;
        const r = relativePathInFolder(value);
        if (!r.ok) issues.push({ severity: "error", code: "path-outside-folder", nodeId: id, param, message: `node "${id}": param "${param}" ${r.reason}` });
      }
    }
  }
  if (opts?.sharedOutputs) return issues;
  const writers = new Map<string, string>();
  for (const [id, spec] of specs) {
    const out = sinkOutput(spec, params[id]);
    if (!out || !spec?.writes) continue;
    const key = outputKey(out);
    const first = writers.get(key);
    if (first === undefined) {
      writers.set(key, id);
      continue;
    }
    issues.push({
      severity: "error",
      code: "shared-output",
      nodeId: id,
      param: spec.writes.param,
      message: `node "${id}": param "${spec.writes.param}" writes ${describeOutput(out)}, which node "${first}" writes too — one writer per output: give each sink its own ${out.kind}`,
    });
  }
  const dlq = deadLetterOutput(doc);
  const taken = writers.get(outputKey(dlq));
  if (taken !== undefined) {
    const param = specs.get(taken)?.writes?.param ?? "";
    issues.push({
      severity: "error",
      code: "shared-output",
      nodeId: taken,
      param,
      message: `node "${taken}": param "${param}" writes ${describeOutput(dlq)}, the pipeline's dead-letter output — one writer per output: give the sink another ${dlq.kind}${dlq.kind === "topic" ? " (or set settings.deadLetterTopic)" : ""}`,
    });
  }
  return issues;
}

function typeHint(type: string, operatorTypes: readonly string[]): string {
  const near = closestName(type, operatorTypes);
  if (near) return ` — did you mean "${near}"?`;
  // "kafka" → source.kafka, sink.kafka; "tumbling" → window.tumbling
  const lower = type.toLowerCase();
  const partial = operatorTypes.filter((t) => t.toLowerCase().split(".").includes(lower));
  if (partial.length) return ` — did you mean ${partial.map((t) => `"${t}"`).join(" or ")}?`;
  return ` (known types: ${operatorTypes.join(", ")})`;
}

/** The declared fields on each node's main input and output, in topological order. */
function propagateFields(
  nodeIds: readonly string[],
  specs: ReadonlyMap<string, OperatorSpec | undefined>,
  params: Record<string, unknown>,
  incoming: ReadonlyMap<string, Edge[]>,
  hasCycle: boolean,
): { input: Map<string, readonly string[] | undefined> } {
  const input = new Map<string, readonly string[] | undefined>();
  const output = new Map<string, readonly string[] | undefined>();
  if (hasCycle) return { input };
  const portFields = (nodeId: string, port: string): readonly string[] | undefined => {
    if (port === MAIN_OUT) return output.get(nodeId);
    if (port === "late") return input.get(nodeId); // late records are input records, unchanged
    if (port === "errors") return ["error", "record"];
    return undefined;
  };
  const visiting = new Set<string>();
  const visit = (id: string): void => {
    if (output.has(id) || visiting.has(id)) return;
    visiting.add(id);
    const feeding = (incoming.get(id) ?? []).filter((e) => e.to.port === MAIN_IN);
    for (const e of feeding) visit(e.from.nodeId);
    const sets = feeding.map((e) => portFields(e.from.nodeId, e.from.port));
    const merged = sets.length === 0 || sets.some((s) => s === undefined) ? undefined : [...new Set(sets.flatMap((s) => s ?? []))];
    input.set(id, merged);
    const spec = specs.get(id);
    output.set(id, spec?.outputFields && id in params ? spec.outputFields(params[id], merged) : undefined);
    visiting.delete(id);
  };
  nodeIds.forEach(visit);
  return { input };
}

// ---- Two-stage aggregation ----------------------------------------------------------------------

/** Nodes a partial aggregate passes through unchanged between its window and window.combine. */
const RECORD_PRESERVING = new Set(["keyBy", "filter", "union"]);
/** Nodes that may build records of any shape: a combine behind one of them is not judged. */
const RECORD_BUILDING = new Set(["map", "process.custom"]);
const PARTIAL_WINDOWS = new Set(["window.tumbling", "window.hopping"]);

interface AggregateLike {
  op: string;
  field?: string;
}

/**
 * window.combine merges partial accumulators by its own aggregate and purges by its own
 * lateness: a partial stage with another op, field, lateness or window gives wrong results
 * silently (or sends every partial to errors), so the graph is checked here, where both nodes
 * are known. Walks upstream through record-preserving nodes to the partial stages.
 */
function combineIssues(nodeIds: readonly string[], specs: ReadonlyMap<string, OperatorSpec | undefined>, params: Record<string, unknown>, incoming: ReadonlyMap<string, Edge[]>): Issue[] {
  const issues: Issue[] = [];
  const typeOf = (id: string) => specs.get(id)?.type;
  for (const id of nodeIds) {
    if (typeOf(id) !== "window.combine" || !(id in params)) continue;
    const p = params[id] as { aggregate: AggregateLike; allowedLatenessMs: number };
    const issue = (message: string, param?: string) => issues.push({ severity: "error", code: "combine-mismatch", nodeId: id, ...(param ? { param } : {}), message: `node "${id}": ${message}` });

    // Upstream paths: the first keyBy met (the re-key) and the window at the end of each.
    const windows: { node: string; rekey: string | undefined }[] = [];
    let opaque = false;
    const seen = new Set<string>();
    const stack: { node: string; rekey: string | undefined }[] = (incoming.get(id) ?? []).filter((e) => e.to.port === MAIN_IN).map((e) => ({ node: e.from.nodeId, rekey: undefined }));
    while (stack.length) {
      const at = stack.pop() as { node: string; rekey: string | undefined };
      const key = `${at.node}|${at.rekey ?? ""}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const type = typeOf(at.node);
      if (type !== undefined && PARTIAL_WINDOWS.has(type)) windows.push(at);
      else if (type !== undefined && RECORD_PRESERVING.has(type)) {
        const rekey = at.rekey ?? (type === "keyBy" ? at.node : undefined);
        for (const e of incoming.get(at.node) ?? []) if (e.to.port === MAIN_IN) stack.push({ node: e.from.nodeId, rekey });
      } else if (type === undefined || RECORD_BUILDING.has(type)) opaque = true;
    }
    if (windows.length === 0) {
      if (!opaque) {
        issue(`its input does not come from a window.tumbling or window.hopping with "partial": true — window.combine is the second stage of a two-stage aggregation (keyBy with salt → window with partial → keyBy on "key" → window.combine)`);
      }
      continue;
    }

    let first: { node: string; size: number; slide: number; label: string } | undefined;
    const order = (n: string) => nodeIds.indexOf(n);
    for (const w of windows.sort((a, b) => order(a.node) - order(b.node))) {
      if (!(w.node in params)) continue; // its own params are reported on it
      const wp = params[w.node] as { sizeMs: number; slideMs?: number; aggregate: AggregateLike; allowedLatenessMs: number; partial?: boolean };
      const who = `"${w.node}" (${typeOf(w.node)})`;
      if (wp.partial !== true) {
        issue(`its input comes from ${who} without param "partial": true, so it receives results, not partial aggregates — set "partial": true on "${w.node}"`);
        continue;
      }
      if (w.rekey === undefined) {
        issue(`its partial stage ${who} is not keyed again before it, so each salted sub-key stays apart — add keyBy { field: "key" } between them`);
      } else {
        const kp = params[w.rekey] as { field?: unknown } | undefined;
        if (kp !== undefined && kp.field !== "key") {
          issue(`its input is keyed by "${w.rekey}" on field "${String(kp.field)}", so partials of one key never meet — key them by "key" (the key without its salt)`);
        }
      }
      if (wp.aggregate.op !== p.aggregate.op) {
        issue(`param "aggregate.op" is "${p.aggregate.op}", but its partial stage ${who} aggregates "${wp.aggregate.op}" — set the same aggregate on both`, "aggregate.op");
      } else if (wp.aggregate.field !== p.aggregate.field) {
        const mine = p.aggregate.field === undefined ? "is not set" : `is "${p.aggregate.field}"`;
        const theirs = wp.aggregate.field === undefined ? "no field" : `field "${wp.aggregate.field}"`;
        issue(`param "aggregate.field" ${mine}, but its partial stage ${who} aggregates ${theirs} — set the same aggregate on both`, "aggregate.field");
      }
      if (wp.allowedLatenessMs !== p.allowedLatenessMs) {
        issue(`param "allowedLatenessMs" is ${formatDuration(p.allowedLatenessMs)}, but its partial stage ${who} allows ${formatDuration(wp.allowedLatenessMs)} — set the same allowedLatenessMs on both`, "allowedLatenessMs");
      }
      const slide = wp.slideMs ?? wp.sizeMs;
      const label = `${typeOf(w.node)}, ${formatDuration(wp.sizeMs)}${slide !== wp.sizeMs ? ` every ${formatDuration(slide)}` : ""}`;
      if (first === undefined) first = { node: w.node, size: wp.sizeMs, slide, label };
      else if (first.size !== wp.sizeMs || first.slide !== slide) {
        issue(`its partial stages "${first.node}" (${first.label}) and "${w.node}" (${label}) have different windows — a combine merges the partials of one window`);
      }
    }
  }
  return issues;
}

function statePitfalls(
  nodeIds: readonly string[],
  specs: ReadonlyMap<string, OperatorSpec | undefined>,
  params: Record<string, unknown>,
  outgoing: ReadonlyMap<string, Edge[]>,
  kinds: PortKinds,
): Issue[] {
  const issues: Issue[] = [];
  for (const id of nodeIds) {
    const spec = specs.get(id);
    if (!spec) continue;

    // Late data: a windowed or ordered operator's `late` port left unconnected.
    if (spec.outputs.some((p) => p.id === "late") && !(outgoing.get(id) ?? []).some((e) => e.from.port === "late")) {
      issues.push({
        severity: "warning",
        code: "late-port-unconnected",
        nodeId: id,
        message: `node "${id}": its "late" output is not connected, so late records end up as dead letters instead of being reviewed — connect "${id}:late" to a sink`,
      });
    }

    if (!(id in params)) continue;
    const p = params[id];

    // TTL shorter than the window it serves.
    if (spec.stateful) {
      const r = retentionOf(spec, p);
      if (r.ttlMs !== undefined && r.windowMs !== undefined && r.ttlMs < r.windowMs) {
        issues.push({
          severity: "warning",
          code: "ttl-shorter-than-window",
          nodeId: id,
          ...(r.ttlParam ? { param: r.ttlParam } : {}),
          message: `node "${id}": ${r.ttlParam ? `param "${r.ttlParam}"` : "the state TTL"} (${formatDuration(r.ttlMs)}) is shorter than the window it serves (${formatDuration(r.windowMs)}), so state expires while the window still needs it — use at least 2× the window (${formatDuration(2 * r.windowMs)})`,
        });
      }
    }

    // Keys: unbounded cardinality into state without TTL; hot keys without salt.
    if (!spec.keySelector) continue;
    const field = valueAt(p, ["field"]);
    if (typeof field !== "string") continue;
    const stateful = keyedConsumers(id, specs, outgoing, kinds).filter((n) => specs.get(n)?.stateful);
    const norm = normalizeField(field.split(".").at(-1) ?? field);
    if (UNBOUNDED_KEY_FIELDS.has(norm)) {
      const leaking = stateful.filter((n) => {
        const s = specs.get(n);
        if (!s || !(n in params)) return false;
        const r = retentionOf(s, params[n]);
        return r.ttlMs === undefined && !r.freedByTimers;
      });
      for (const n of leaking) {
        const who = n === id ? "its state" : `"${n}" (${specs.get(n)?.type})`;
        issues.push({
          severity: "warning",
          code: "unbounded-key",
          nodeId: id,
          param: "field",
          message: `node "${id}": key field "${field}" is likely unique per record (unbounded key cardinality), and ${who} keeps state per key without a TTL, so state grows forever — key by the entity you track (cardId, customerId) or bound the state with a TTL`,
        });
      }
    }
    if (LOW_CARDINALITY_FIELDS.has(norm) && valueAt(p, ["salt"]) === undefined && stateful.length > 0 && spec.params && objectKeys(spec.params).includes("salt")) {
      const names = stateful.map((n) => `"${n}"`).join(", ");
      issues.push({
        severity: "warning",
        code: "hot-key",
        nodeId: id,
        param: "field",
        message: `node "${id}": key field "${field}" has few distinct values, so a few hot keys carry all the load of ${names} on one subtask each — set param "salt" (e.g. 8) and combine the partial results, or key by a finer field such as cardId`,
      });
    }
  }
  return issues;
}

/**
 * The nodes that see the key set by `keyNode`: the node itself, then downstream through
 * stateless nodes that keep a keyed stream keyed, until something re-keys the stream.
 */
function keyedConsumers(keyNode: string, specs: ReadonlyMap<string, OperatorSpec | undefined>, outgoing: ReadonlyMap<string, Edge[]>, kinds: PortKinds): string[] {
  const found: string[] = [keyNode];
  const seen = new Set([keyNode]);
  const queue = [keyNode];
  while (queue.length) {
    const n = queue.shift() as string;
    for (const e of outgoing.get(n) ?? []) {
      if (e.from.port !== MAIN_OUT || kinds[n]?.[MAIN_OUT] !== "keyed" || seen.has(e.to.nodeId)) continue;
      seen.add(e.to.nodeId);
      const spec = specs.get(e.to.nodeId);
      if (!spec || spec.keySelector) continue; // re-keyed: a new key space starts there
      found.push(e.to.nodeId);
      if (!spec.stateful) queue.push(e.to.nodeId);
    }
  }
  return found;
}
