// The graph compiler of parallel jobs: pipeline → task DAG.
//
//   source task (main thread, 1)          keyed subtasks (worker threads, N)       sink task (main thread, 1)
//   sources + stateless operators   ──▶   from the first keyBy (or self-keying  ──▶  sink.* writers and the
//   up to the first keyed node,           operator) on, each owning a key-group       dead-letter output
//   chained                               range (Flink's assignment)
//
// Records crossing into the keyed part are routed by the key group of the key the receiving node's
// key selector computes (so each record goes to the one subtask that keeps that key); records for
// a side input (a reference port) are broadcast; watermarks and idleness are broadcast. Within the
// keyed part records stay in their subtask (forward), which holds because keys do not change there:
// a second key selector behind the first would need a second shuffle, which this compiler refuses
// (the job then runs single-threaded, with a warning).
import {
  compileGraph,
  computeKeyGroupRangeForOperatorIndex,
  getOperatorSpec,
  type GraphNode,
  type KeyGroupRange,
  type KeySelector,
  type PipelineDocument,
} from "@keyflow/operators";

/** An edge from the source task into the keyed part: (node, input port, watermark channel). */
export interface ExchangeRoute {
  to: string;
  port: string;
  channel: number;
  /** How records on it are distributed over the subtasks. */
  mode: "hash" | "broadcast" | "first";
}

export interface ParallelPlan {
  parallelism: number;
  maxParallelism: number;
  /** Sources and the operators chained with them: the source task. */
  headNodes: ReadonlySet<string>;
  /** Operators every keyed subtask runs. */
  keyedNodes: ReadonlySet<string>;
  sinkNodes: readonly string[];
  /** Crossing edges; a record or watermark on the wire names its route by index. */
  routes: readonly ExchangeRoute[];
  /** Key-group range of each keyed subtask. */
  ranges: readonly KeyGroupRange[];
}

export type PlanResult = { ok: true; plan: ParallelPlan } | { ok: false; reason: string };

export function planParallel(doc: PipelineDocument, parallelism = doc.settings.parallelism): PlanResult {
  const maxParallelism = doc.settings.maxParallelism;
  if (parallelism <= 1) return { ok: false, reason: "parallelism is 1" };
  if (parallelism > maxParallelism) return { ok: false, reason: `parallelism ${parallelism} exceeds maxParallelism ${maxParallelism}` };
  const graph = compileGraph(doc, getOperatorSpec);
  const nodes = [...graph.order].map((id) => graph.nodes.get(id) as GraphNode);
  const custom = nodes.find((n) => n.type === "process.custom");
  if (custom) return { ok: false, reason: `node "${custom.id}" (process.custom) needs the runner's sandbox, which keyed subtasks in worker threads do not have yet` };
  const keyed = new Set<string>();
  for (const n of nodes) {
    if (n.role !== "operator") continue;
    const fromKeyed = n.upstream.some((u) => keyed.has(u));
    if (n.spec.keySelector !== undefined) {
      if (fromKeyed) {
        return { ok: false, reason: `node "${n.id}" keys records again behind a keyed node; a second shuffle between keyed subtasks is not supported yet` };
      }
      keyed.add(n.id);
    } else if (fromKeyed) keyed.add(n.id);
  }
  if (keyed.size === 0) return { ok: false, reason: "the pipeline has no keyed operator (keyBy) to run in parallel" };
  const head = new Set(nodes.filter((n) => n.role !== "sink" && !keyed.has(n.id)).map((n) => n.id));
  const routes: ExchangeRoute[] = [];
  for (const n of nodes) {
    if (!head.has(n.id)) continue;
    for (const list of n.routes.values()) {
      for (const r of list) {
        if (!keyed.has(r.to)) continue;
        if (routes.some((x) => x.to === r.to && x.port === r.port && x.channel === r.channel)) continue;
        const to = graph.nodes.get(r.to) as GraphNode;
        const mode: ExchangeRoute["mode"] = r.port !== "in" ? "broadcast" : to.spec.keySelector !== undefined ? "hash" : "first";
        routes.push({ to: r.to, port: r.port, channel: r.channel, mode });
      }
    }
  }
  // Watermark-only routes (a head node feeding a keyed node only through ports listed above is
  // covered; these make sure every (node, channel) pair a watermark can take has an index).
  for (const n of nodes) {
    if (!keyed.has(n.id)) continue;
    n.upstream.forEach((u, channel) => {
      if (!head.has(u)) return;
      if (!routes.some((x) => x.to === n.id && x.channel === channel)) routes.push({ to: n.id, port: "in", channel, mode: "broadcast" });
    });
  }
  const ranges = Array.from({ length: parallelism }, (_, i) => computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, i));
  return {
    ok: true,
    plan: { parallelism, maxParallelism, headNodes: head, keyedNodes: keyed, sinkNodes: nodes.filter((n) => n.role === "sink").map((n) => n.id), routes, ranges },
  };
}

/** Key selectors of the hash routes, by route index (built where the records are routed). */
export function routeKeySelectors(doc: PipelineDocument, plan: ParallelPlan): Array<KeySelector | undefined> {
  const graph = compileGraph(doc, getOperatorSpec);
  return plan.routes.map((r) => {
    if (r.mode !== "hash") return undefined;
    const n = graph.nodes.get(r.to) as GraphNode;
    return n.spec.keySelector?.(n.params as never);
  });
}
