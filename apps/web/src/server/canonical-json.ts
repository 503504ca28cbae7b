// Canonical JSON (keys sorted, no whitespace) lives in @keyflow/db, which hashes the audit chain
// with it; the graph hash uses the same function so the two can never drift apart.
import { canonicalJson, sha256Hex } from "@keyflow/db";

export { canonicalJson };

/** sha256 (hex) of the canonical JSON of a graph: PipelineVersion.graphHash. */
export function graphHash(graph: unknown): string {
  return sha256Hex(canonicalJson(graph));
}
