// The isolate's answers are untrusted input: the user's code runs in the same realm as the
// prelude and can make it report anything. Everything is checked here, field by field, before
// the runner sees it; anything unexpected is an `invalid-output` error, never a crash.
import { PROTO_FIELD_REFUSAL, type JsonObject, type JsonValue } from "@keyflow/operators";
import type { Effects, Emitted, SideEmitted, StateCell, StateTouch, StateUpdate, TimerUpdate } from "./types";

export class InvalidEffects extends Error {}

const fail = (path: string, what: string): never => {
  throw new InvalidEffects(`${path}: ${what}`);
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function arrayAt(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) return fail(path, "not an array");
  return v;
}
function stringAt(v: unknown, path: string, max = 10_000): string {
  if (typeof v !== "string") return fail(path, "not a string");
  if (v.length > max) return fail(path, `longer than ${max} characters`);
  return v;
}
function timeAt(v: unknown, path: string): number {
  if (typeof v !== "number" || !Number.isFinite(v)) return fail(path, "not a finite number");
  return v;
}
function ttlAt(v: unknown, path: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) return fail(path, "not a positive number");
  return v;
}

/** JSON.parse output is JSON by construction; this only checks the top-level shape and depth. */
function jsonAt(v: unknown, path: string, depth = 0): JsonValue {
  if (depth > 100) return fail(path, "nested too deeply");
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : fail(path, "not a finite number");
  if (Array.isArray(v)) {
    v.forEach((x, i) => jsonAt(x, `${path}[${i}]`, depth + 1));
    return v as JsonValue[];
  }
  if (isRecord(v)) {
    // As sources refuse such records (see PROTO_FIELD_REFUSAL).
    if (Object.prototype.hasOwnProperty.call(v, "__proto__")) return fail(`${path}.__proto__`, `a field named "__proto__", ${PROTO_FIELD_REFUSAL}`);
    for (const k of Object.keys(v)) jsonAt(v[k], `${path}.${k}`, depth + 1);
    return v as JsonObject;
  }
  return fail(path, "not JSON");
}
function objectAt(v: unknown, path: string): JsonObject {
  if (!isRecord(v)) return fail(path, "not a JSON object");
  return jsonAt(v, path) as JsonObject;
}

function cellAt(v: unknown, path: string): StateCell | null {
  if (v === null) return null;
  if (!isRecord(v)) return fail(path, "not a state cell");
  switch (v.kind) {
    case "value":
      return { kind: "value", value: jsonAt(v.value, `${path}.value`) };
    case "list":
      return { kind: "list", values: arrayAt(v.values, `${path}.values`).map((x, i) => jsonAt(x, `${path}.values[${i}]`)) };
    case "map": {
      if (!isRecord(v.entries)) return fail(`${path}.entries`, "not an object");
      const entries: { [k: string]: JsonValue } = {};
      for (const k of Object.keys(v.entries)) {
        // defineProperty: a map key "__proto__" stays a key.
        Object.defineProperty(entries, k, { value: jsonAt(v.entries[k], `${path}.entries`), enumerable: true, writable: true, configurable: true });
      }
      return { kind: "map", entries };
    }
    default:
      return fail(`${path}.kind`, "not value, list or map");
  }
}

const STATE_KINDS = new Set(["value", "list", "map"]);

export function validateEffects(v: unknown, sidePorts: readonly string[] | null): Effects {
  if (!isRecord(v)) return fail("effects", "not an object");
  const outputs: Emitted[] = arrayAt(v.outputs, "outputs").map((o, i) => {
    if (!isRecord(o)) return fail(`outputs[${i}]`, "not an object");
    return { value: objectAt(o.value, `outputs[${i}].value`), timestamp: timeAt(o.timestamp, `outputs[${i}].timestamp`) };
  });
  const sideOutputs: SideEmitted[] = arrayAt(v.sideOutputs, "sideOutputs").map((o, i) => {
    if (!isRecord(o)) return fail(`sideOutputs[${i}]`, "not an object");
    const port = stringAt(o.port, `sideOutputs[${i}].port`, 200);
    if (sidePorts !== null && !sidePorts.includes(port)) fail(`sideOutputs[${i}].port`, `no side output "${port}"`);
    return { port, value: objectAt(o.value, `sideOutputs[${i}].value`), timestamp: timeAt(o.timestamp, `sideOutputs[${i}].timestamp`) };
  });
  const seen = new Set<string>();
  const state: StateUpdate[] = arrayAt(v.state, "state").map((s, i) => {
    if (!isRecord(s)) return fail(`state[${i}]`, "not an object");
    const name = stringAt(s.name, `state[${i}].name`, 1000);
    if (seen.has(name)) fail(`state[${i}].name`, `"${name}" written twice`);
    seen.add(name);
    const ttlMs = ttlAt(s.ttlMs, `state[${i}].ttlMs`);
    const cell = cellAt(s.cell, `state[${i}].cell`);
    return ttlMs === undefined ? { name, cell } : { name, cell, ttlMs };
  });
  const touched: StateTouch[] = arrayAt(v.touched, "touched").map((s, i) => {
    if (!isRecord(s)) return fail(`touched[${i}]`, "not an object");
    const name = stringAt(s.name, `touched[${i}].name`, 1000);
    if (typeof s.kind !== "string" || !STATE_KINDS.has(s.kind)) return fail(`touched[${i}].kind`, "not value, list or map");
    const ttlMs = ttlAt(s.ttlMs, `touched[${i}].ttlMs`);
    const kind = s.kind as StateTouch["kind"];
    return ttlMs === undefined ? { name, kind } : { name, kind, ttlMs };
  });
  const timers: TimerUpdate[] = arrayAt(v.timers, "timers").map((t, i) => {
    if (!isRecord(t)) return fail(`timers[${i}]`, "not an object");
    if (t.op !== "register" && t.op !== "delete") return fail(`timers[${i}].op`, "not register or delete");
    if (t.domain !== "event" && t.domain !== "processing") return fail(`timers[${i}].domain`, "not event or processing");
    return { op: t.op, domain: t.domain, time: timeAt(t.time, `timers[${i}].time`), tag: stringAt(t.tag, `timers[${i}].tag`, 200) };
  });
  const logs = arrayAt(v.logs, "logs").map((l, i) => stringAt(l, `logs[${i}]`, 4000));
  return { outputs, sideOutputs, state, touched, timers, logs };
}

export type CallAnswer =
  | { ok: true; effects: Effects }
  | { ok: false; error: { name: string; message: string; stack: string | undefined }; partial: Effects | undefined };

/** Parses and checks one answer of the isolate (JSON text). Throws InvalidEffects. */
export function parseAnswer(raw: string, sidePorts: readonly string[] | null): CallAnswer {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new InvalidEffects("the answer is not JSON");
  }
  if (!isRecord(v)) throw new InvalidEffects("the answer is not an object");
  if (v.ok === true) return { ok: true, effects: validateEffects(v.effects, sidePorts) };
  if (v.ok !== false || !isRecord(v.error)) throw new InvalidEffects("the answer is neither a result nor an error");
  const e = v.error;
  let partial: Effects | undefined;
  try {
    partial = v.partial === undefined ? undefined : validateEffects(v.partial, sidePorts);
  } catch {
    partial = undefined; // the error itself is what matters
  }
  return {
    ok: false,
    error: {
      name: typeof e.name === "string" ? e.name.slice(0, 200) : "Error",
      message: typeof e.message === "string" ? e.message.slice(0, 2000) : "unknown error",
      stack: typeof e.stack === "string" ? e.stack.slice(0, 8000) : undefined,
    },
    partial,
  };
}
