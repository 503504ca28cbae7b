// Canonical JSON: object keys sorted (by UTF-16 code units), no whitespace, `undefined` members
// dropped, arrays kept in order. Two documents that differ only in key order or formatting get
// the same text, hence the same graphHash.
import { createHash } from "node:crypto";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map((item: unknown) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  }
  if (!isRecord(value)) {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`canonicalJson: ${typeof value} is not JSON`);
    return text;
  }
  const entries = Object.entries(value)
    .filter(([, member]) => member !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(",")}}`;
}

/** sha256 (hex) of the canonical JSON of a graph: PipelineVersion.graphHash. */
export function graphHash(graph: unknown): string {
  return createHash("sha256").update(canonicalJson(graph)).digest("hex");
}
