// Evidence: every alert says which records made it fire, so that an analyst can see why and an
// auditor can reproduce it. References are the records' ids and timestamps, capped so that an
// alert on a hot key stays small, with the total so nothing is hidden.
import type { JsonObject, JsonValue } from "../../core/api";
import { readField } from "./fields";

/** At most this many record references per alert; `total` still counts every record. */
export const EVIDENCE_CAP = 50;

/** A reference to one record: its id (when it has one) and its event time. */
export interface EvidenceRef extends JsonObject {
  ts: number;
}

export interface Evidence extends JsonObject {
  records: EvidenceRef[];
  total: number;
}

/** The reference for a record: `{ id, ts }`, or `{ ts }` when the record has no scalar id. */
export function evidenceRef(value: JsonObject, ts: number, idField: string): EvidenceRef {
  const id: JsonValue | undefined = readField(value, idField);
  return typeof id === "string" || typeof id === "number" ? { id, ts } : { ts };
}

/** Builds the evidence from the most recent references (`refs` in event-time order). */
export function evidenceOf(refs: readonly EvidenceRef[], total: number = refs.length): Evidence {
  return { records: refs.length > EVIDENCE_CAP ? refs.slice(refs.length - EVIDENCE_CAP) : [...refs], total };
}

/** Appends a reference to a capped list kept in state (drops the oldest beyond the cap). */
export function appendCapped(refs: readonly EvidenceRef[], ref: EvidenceRef): EvidenceRef[] {
  const next = refs.length >= EVIDENCE_CAP ? refs.slice(refs.length - EVIDENCE_CAP + 1) : [...refs];
  next.push(ref);
  return next;
}

/** The shared `idField` param's description, so every operator words it the same way. */
export const ID_FIELD_DESCRIPTION =
  "Field holding a record's id, quoted in each alert's evidence (`{ id, ts }`); records without it are referenced by timestamp only. Default \"id\"";
