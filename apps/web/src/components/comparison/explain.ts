// What an alert says about why it fired, read from the alert itself (the engine puts its evidence
// and any enrichment in it, see packages/operators/src/operators/shared/{evidence,enrichment}.ts):
// the records that made it fire, the reference data valid at its event time, and the version's
// parameters beside them. Framework-free, so it is tested without a browser.

export interface EvidenceRecord {
  id: string | number | null;
  ts: number;
}

export interface ReferenceUsed {
  /** The field holding the reference record (an enrichment's `targetField`). */
  field: string;
  value: unknown;
  /** When that reference version became valid (its `<field>Version`), or null when none matched. */
  validFrom: number | null;
}

export interface AlertExplanation {
  /** Record id (the comparison's id field) and event time of the alert, when present. */
  id: string | null;
  ts: number | null;
  kind: string | null;
  evidence: { records: EvidenceRecord[]; total: number } | null;
  references: ReferenceUsed[];
}

/** One node of the version that raised the alert, with the parameters it ran with. */
export interface VersionParameter {
  nodeId: string;
  type: string;
  params: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function evidenceOf(v: unknown): AlertExplanation["evidence"] {
  if (!isObject(v) || !Array.isArray(v.records)) return null;
  const records = v.records.filter(isObject).flatMap((r): EvidenceRecord[] => (typeof r.ts === "number" ? [{ id: typeof r.id === "string" || typeof r.id === "number" ? r.id : null, ts: r.ts }] : []));
  return { records, total: typeof v.total === "number" ? v.total : records.length };
}

/** Enrichments leave `<field>` and `<field>Version` on the record: each such pair is a reference used. */
function referencesOf(record: Record<string, unknown>): ReferenceUsed[] {
  return Object.keys(record)
    .filter((k) => k.endsWith("Version") && k.length > "Version".length)
    .flatMap((k) => {
      const field = k.slice(0, -"Version".length);
      const version = record[k];
      if (!(field in record) || (version !== null && typeof version !== "number")) return [];
      return [{ field, value: record[field], validFrom: version }];
    });
}

export function explainAlert(alert: Record<string, unknown>, idField: string): AlertExplanation {
  // Keyed-process alerts carry the triggering record as `event`; window results and passed-through records are the record.
  const event = isObject(alert.event) ? alert.event : alert;
  const id = event[idField] ?? alert[idField];
  const ts = typeof alert.ts === "number" ? alert.ts : typeof alert.windowEnd === "number" ? alert.windowEnd : null;
  const kind = typeof alert.type === "string" ? alert.type : typeof alert.kind === "string" ? alert.kind : null;
  return {
    id: typeof id === "string" || typeof id === "number" ? String(id) : null,
    ts,
    kind,
    evidence: evidenceOf(alert.evidence),
    references: referencesOf(event),
  };
}
