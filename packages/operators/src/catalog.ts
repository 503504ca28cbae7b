// The one registry of operators: the palette, the inspector, the validator and the runner read
// only this list. Each operator lives in its own folder (spec + implementation + tests); adding one
// means importing its spec below and listing it in `catalog`, in its palette section.
import type { OperatorCategory, OperatorSpec } from "./core/spec";

// sources
import { sourceDemoSpec } from "./operators/source.demo/source.demo";
import { sourceFileSpec } from "./operators/source.file/source.file";
import { sourceKafkaSpec } from "./operators/source.kafka/source.kafka";
// keying and transforms
import { filterSpec } from "./operators/filter/filter";
import { keyBySpec } from "./operators/keyBy/keyBy";
import { mapSpec } from "./operators/map/map";
import { unionSpec } from "./operators/union/union";
// windows
import { windowCombineSpec, windowHoppingSpec, windowSessionSpec, windowTumblingSpec } from "./operators/windows";
// fraud patterns
import { dailyTotalSpec } from "./operators/dailyTotal/dailyTotal";
import { dedupSpec } from "./operators/dedup/dedup";
import { pendingWatchdogSpec } from "./operators/pendingWatchdog/pendingWatchdog";
import { sessionizeSpec } from "./operators/sessionize/sessionize";
import { structuringSpec } from "./operators/structuring/structuring";
import { thresholdSpec } from "./operators/threshold/threshold";
import { timeoutSpec } from "./operators/timeout/timeout";
import { topKSpec } from "./operators/topK/topK";
import { velocitySpec } from "./operators/velocity/velocity";
// enrichment
import { enrichBroadcastSpec } from "./operators/enrich-broadcast/enrich-broadcast";
import { enrichTemporalSpec } from "./operators/enrich-temporal/enrich-temporal";
// custom
import { processCustomSpec } from "./operators/process-custom/process-custom";
// sinks
import { sinkFileSpec } from "./operators/sink.file/sink.file";
import { sinkKafkaSpec } from "./operators/sink.kafka/sink.kafka";

export const catalog = [
  // sources
  sourceKafkaSpec,
  sourceFileSpec,
  sourceDemoSpec,
  // keying and transforms
  keyBySpec,
  filterSpec,
  mapSpec,
  unionSpec,
  // windows
  windowTumblingSpec,
  windowHoppingSpec,
  windowSessionSpec,
  windowCombineSpec,
  // fraud patterns
  velocitySpec,
  dedupSpec,
  thresholdSpec,
  timeoutSpec,
  sessionizeSpec,
  topKSpec,
  dailyTotalSpec,
  structuringSpec,
  pendingWatchdogSpec,
  // enrichment
  enrichBroadcastSpec,
  enrichTemporalSpec,
  // custom
  processCustomSpec,
  // sinks
  sinkKafkaSpec,
  sinkFileSpec,
] as const satisfies readonly OperatorSpec[];

/** Every operator type id the catalog knows, as a union type (`"filter" | "keyBy" | ...`). */
export type OperatorType = (typeof catalog)[number]["type"];

/** Every operator type id, in palette order. */
export const operatorTypes: readonly OperatorType[] = catalog.map((spec) => spec.type);

/** The spec of an operator type, or undefined for a type the catalog does not know. */
export function getOperatorSpec(type: string): OperatorSpec | undefined {
  return byType.get(type);
}

export function isOperatorType(type: string): type is OperatorType {
  return byType.has(type);
}

// ---- The palette ----------------------------------------------------------------------------

export interface PaletteSection {
  id: string;
  title: string;
  description: string;
  /** Spec categories shown in this section, in order. */
  categories: readonly OperatorCategory[];
}

/** The palette's sections, in the order a pipeline reads: from sources to sinks. */
export const paletteSections: readonly PaletteSection[] = [
  { id: "sources", title: "Sources", description: "Where records come from: Kafka topics, files, the demo generator", categories: ["source"] },
  { id: "keying", title: "Keying & transforms", description: "Key the stream, filter and reshape records", categories: ["keying", "transform"] },
  { id: "windows", title: "Windows", description: "Aggregates over tumbling, hopping and session windows", categories: ["window"] },
  { id: "patterns", title: "Fraud patterns", description: "Velocity, dedup, thresholds, timeouts and other stateful rules", categories: ["pattern"] },
  { id: "enrichment", title: "Enrichment", description: "Join records with reference data", categories: ["enrichment"] },
  { id: "custom", title: "Custom", description: "Your own keyed process function", categories: ["custom"] },
  { id: "sinks", title: "Sinks", description: "Where results go: Kafka topics, files", categories: ["sink"] },
];

/** The catalog grouped for the palette; sections without operators are left out. */
export function paletteGroups(): { section: PaletteSection; specs: readonly OperatorSpec[] }[] {
  return paletteSections
    .map((section) => ({ section, specs: section.categories.flatMap((c) => catalog.filter((s: OperatorSpec) => s.category === c)) }))
    .filter((g) => g.specs.length > 0);
}

// ---- Consistency, checked when the module loads ---------------------------------------------

/**
 * Indexes the specs by type and refuses a broken catalog at load time (a duplicate type, a spec
 * whose ports are ambiguous), so the mistake shows at the first import rather than as a strange
 * validation result. catalog.test.ts checks the softer rules (docs, param descriptions).
 */
export function indexCatalog(specs: readonly OperatorSpec[]): Map<string, OperatorSpec> {
  const index = new Map<string, OperatorSpec>();
  const categories = new Set(paletteSections.flatMap((s) => s.categories));
  for (const spec of specs) {
    if (index.has(spec.type)) throw new Error(`catalog: operator type "${spec.type}" is listed twice; each type id must be unique`);
    if (!categories.has(spec.category)) throw new Error(`catalog: operator "${spec.type}" has category "${spec.category}", which no palette section shows`);
    for (const ports of [spec.inputs.map((p) => p.id), spec.outputs.map((p) => p.id)]) {
      const dup = ports.find((id, i) => ports.indexOf(id) !== i);
      if (dup !== undefined) throw new Error(`catalog: operator "${spec.type}" declares port "${dup}" twice`);
    }
    const main = spec.outputs.filter((p) => !p.side);
    if (main.length > 1) throw new Error(`catalog: operator "${spec.type}" has ${main.length} main outputs; the others must be side outputs`);
    index.set(spec.type, spec);
  }
  return index;
}

// Last in the module: indexCatalog reads paletteSections, which must be initialized first.
const byType: ReadonlyMap<string, OperatorSpec> = indexCatalog(catalog);
