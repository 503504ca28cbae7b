// Shadow against enforcement, as numbers: alerts of two versions matched by the id of the record
// that fired them, counted (in both, only in the new, only in the old), per hour of event time,
// sampled, and scored against fraud labels: a label field in the records, or a chargeback topic
// joined by transaction id (a charged-back transaction is fraud, any other is not). Pure: the Kafka reading
// is in comparison-kafka.ts, the choice of versions and topics in comparison.ts.
import { z } from "zod";

/** One alert as read from a topic: its parsed value and where it came from. */
export interface ReadAlert {
  topic: string;
  partition: number;
  offset: string;
  /** The message timestamp (the runner writes the alert's event time there). */
  timestamp: number;
  key: string | null;
  value: Record<string, unknown>;
  /** The matched record id when the reader knows it (another engine's alerts name it in a field of their own). */
  recordId?: string;
}

/** An alert that could not be compared, with why (never dropped silently). */
export interface UnreadableAlert {
  topic: string;
  partition: number;
  offset: string;
  reason: string;
}

const alertValueSchema = z.record(z.string(), z.unknown());

/** Parses a message value into an alert object, or says why it is not one. */
export function parseAlert(raw: string | null): { ok: true; value: Record<string, unknown> } | { ok: false; reason: string } {
  if (raw === null) return { ok: false, reason: "the message has no value" };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, reason: `the value is not JSON: ${raw.slice(0, 80)}` };
  }
  const parsed = alertValueSchema.safeParse(json);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, reason: "the value is not a JSON object" };
}

const scalar = (v: unknown): string | null => (typeof v === "string" || typeof v === "number" ? String(v) : null);

/**
 * The id an alert is matched by: the id of the record that fired it (`event.<idField>`), else the
 * last record of its evidence, else its key and time (alerts without any record id can still be
 * matched between two runs of one graph, but not across a change of key).
 */
export function alertRecordId(alert: Pick<ReadAlert, "key" | "timestamp" | "value">, idField: string): string {
  const event = alert.value.event;
  if (event !== null && typeof event === "object" && !Array.isArray(event)) {
    const id = scalar((event as Record<string, unknown>)[idField]);
    if (id !== null) return id;
  }
  const evidence = alert.value.evidence;
  if (evidence !== null && typeof evidence === "object" && "records" in evidence && Array.isArray(evidence.records)) {
    for (let i = evidence.records.length - 1; i >= 0; i--) {
      const ref: unknown = evidence.records[i];
      if (ref !== null && typeof ref === "object" && "id" in ref) {
        const id = scalar(ref.id);
        if (id !== null) return id;
      }
    }
  }
  const ts = typeof alert.value.ts === "number" ? alert.value.ts : alert.timestamp;
  return `${alert.key ?? ""}@${ts}`;
}

/** A label value as a verdict: true/1/"true"/"yes" is fraud, false/0/"false"/"no" is not, anything else unlabelled. */
export function labelOf(record: unknown, labelField: string): boolean | null {
  if (record === null || typeof record !== "object" || Array.isArray(record)) return null;
  const v = (record as Record<string, unknown>)[labelField];
  if (v === true || v === 1 || v === "true" || v === "yes" || v === "1") return true;
  if (v === false || v === 0 || v === "false" || v === "no" || v === "0") return false;
  return null;
}

/** The alert's label: read from the record that fired it (`event`), else from the alert itself. */
export function alertLabel(alert: Pick<ReadAlert, "value">, labelField: string): boolean | null {
  return labelOf(alert.value.event, labelField) ?? labelOf(alert.value, labelField);
}

export interface Scores {
  /** Alerts whose record carries the label. */
  labelled: number;
  truePositives: number;
  /** truePositives / labelled alerts; null with no labelled alert. */
  precision: number | null;
  /** Fraud records alerted / fraud records in the input; null when the input's labels were not read. */
  recall: number | null;
}

export interface ComparisonStats {
  range: { fromTs: number | null; toTs: number | null };
  counts: { both: number; onlyNew: number; onlyOld: number; newTotal: number; oldTotal: number };
  /** Alerts left out because the record that fired them is not in the compared range (a backtest's input). */
  outOfScope: { new: number; old: number };
  /** Alerts citing a record id already alerted on in the same topic (both kept out of the classes). */
  repeated: { new: number; old: number };
  perHour: { hourStart: number; new: number; old: number }[];
  samples: { both: { new: ReadAlert; old: ReadAlert }[]; onlyNew: ReadAlert[]; onlyOld: ReadAlert[] };
  /** `labelField` names the labels: the field, or `chargebacks:<topic>`; `source` says which kind. */
  scores: { labelField: string; source: "field" | "chargebacks"; new: Scores; old: Scores; fraudInInput: number | null } | null;
}

const HOUR = 3_600_000;

const alertTs = (a: ReadAlert): number => (typeof a.value.ts === "number" ? a.value.ts : a.timestamp);

export interface CompareOptions {
  idField: string;
  /** Event-time bounds, inclusive; null: unbounded on that side. */
  range: { fromTs: number | null; toTs: number | null };
  samples: number;
  /** Label field to score by; null: no scores. */
  labelField: string | null;
  /** Distinct ids of the input's fraud records (for recall); null when the input was not read. */
  fraudIds: ReadonlySet<string> | null;
  /**
   * Ids of charged-back transactions: when set, they are the labels (an alert on one is a true
   * positive, on any other record a false one) and `labelField` only names them.
   */
  chargebackIds?: ReadonlySet<string> | null | undefined;
  /** Record ids in the compared range (a backtest's input): alerts on other records are left out. Null: no restriction. */
  scopeIds?: ReadonlySet<string> | null | undefined;
}

function byId(alerts: readonly ReadAlert[], opts: CompareOptions): { map: Map<string, ReadAlert>; repeated: number; outOfScope: number } {
  const map = new Map<string, ReadAlert>();
  let repeated = 0;
  let outOfScope = 0;
  for (const alert of alerts) {
    const ts = alertTs(alert);
    if ((opts.range.fromTs !== null && ts < opts.range.fromTs) || (opts.range.toTs !== null && ts > opts.range.toTs)) continue;
    const id = alert.recordId ?? alertRecordId(alert, opts.idField);
    if (opts.scopeIds && !opts.scopeIds.has(id)) outOfScope++;
    else if (map.has(id)) repeated++;
    else map.set(id, alert);
  }
  return { map, repeated, outOfScope };
}

function score(alerts: Map<string, ReadAlert>, labelField: string, fraudIds: ReadonlySet<string> | null, chargebackIds: ReadonlySet<string> | null): Scores {
  let labelled = 0;
  let truePositives = 0;
  let recalled = 0;
  for (const [id, alert] of alerts) {
    const label = chargebackIds ? chargebackIds.has(id) : alertLabel(alert, labelField);
    if (label !== null) labelled++;
    if (label === true) truePositives++;
    if (fraudIds?.has(id)) recalled++;
  }
  return {
    labelled,
    truePositives,
    precision: labelled === 0 ? null : truePositives / labelled,
    recall: fraudIds === null || fraudIds.size === 0 ? null : recalled / fraudIds.size,
  };
}

/** Compares the new version's alerts with the old one's over the same events. */
export function compareAlerts(newAlerts: readonly ReadAlert[], oldAlerts: readonly ReadAlert[], opts: CompareOptions): ComparisonStats {
  const n = byId(newAlerts, opts);
  const o = byId(oldAlerts, opts);
  const both: { new: ReadAlert; old: ReadAlert }[] = [];
  const onlyNew: ReadAlert[] = [];
  const onlyOld: ReadAlert[] = [];
  let bothCount = 0;
  for (const [id, alert] of n.map) {
    const other = o.map.get(id);
    if (other) {
      bothCount++;
      if (both.length < opts.samples) both.push({ new: alert, old: other });
    } else onlyNew.push(alert);
  }
  for (const [id, alert] of o.map) if (!n.map.has(id)) onlyOld.push(alert);

  const hours = new Map<number, { new: number; old: number }>();
  const bump = (alert: ReadAlert, which: "new" | "old") => {
    const hourStart = Math.floor(alertTs(alert) / HOUR) * HOUR;
    const slot = hours.get(hourStart) ?? { new: 0, old: 0 };
    slot[which]++;
    hours.set(hourStart, slot);
  };
  for (const alert of n.map.values()) bump(alert, "new");
  for (const alert of o.map.values()) bump(alert, "old");

  return {
    range: opts.range,
    counts: { both: bothCount, onlyNew: onlyNew.length, onlyOld: onlyOld.length, newTotal: n.map.size, oldTotal: o.map.size },
    repeated: { new: n.repeated, old: o.repeated },
    outOfScope: { new: n.outOfScope, old: o.outOfScope },
    perHour: [...hours].sort(([a], [b]) => a - b).map(([hourStart, c]) => ({ hourStart, ...c })),
    samples: { both, onlyNew: onlyNew.slice(0, opts.samples), onlyOld: onlyOld.slice(0, opts.samples) },
    scores:
      opts.labelField === null
        ? null
        : {
            labelField: opts.labelField,
            source: opts.chargebackIds ? "chargebacks" : "field",
            new: score(n.map, opts.labelField, opts.fraudIds, opts.chargebackIds ?? null),
            old: score(o.map, opts.labelField, opts.fraudIds, opts.chargebackIds ?? null),
            fraudInInput: opts.fraudIds?.size ?? null,
          },
  };
}
