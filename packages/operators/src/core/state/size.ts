// A rough estimate of the V8 heap bytes a state value takes, for metrics and the canvas's state
// size badge. Not exact (V8 packs small integers, shares strings): it tells 1 KB from 1 MB.

/** Bytes of one entry in a JS Map besides its key and value (hash table slot, chain, growth slack). */
export const MAP_ENTRY_OVERHEAD = 40;

export function estimateBytes(v: unknown): number {
  switch (typeof v) {
    case "number":
      return 8;
    case "boolean":
      return 4;
    case "string":
      return 16 + v.length;
    case "undefined":
      return 0;
    case "object": {
      if (v === null) return 4;
      if (Array.isArray(v)) {
        let n = 16 + 8 * v.length;
        for (const x of v) if (typeof x === "object" || typeof x === "string") n += estimateBytes(x);
        return n;
      }
      if (v instanceof Map) {
        let n = 32;
        for (const [k, x] of v) n += MAP_ENTRY_OVERHEAD + estimateBytes(k) + estimateBytes(x);
        return n;
      }
      if (v instanceof Set) {
        let n = 32;
        for (const x of v) n += MAP_ENTRY_OVERHEAD - 8 + estimateBytes(x);
        return n;
      }
      let n = 24;
      for (const k in v) n += 8 + estimateBytes((v as Record<string, unknown>)[k]);
      return n;
    }
    default:
      return 8;
  }
}
