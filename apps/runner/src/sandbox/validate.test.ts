// The isolate's answers are untrusted: what parseAnswer refuses, and how it names the place.
import { describe, expect, it } from "vitest";
import { InvalidEffects, parseAnswer } from "./validate";

const answer = (effects: Record<string, unknown>): string =>
  JSON.stringify({ ok: true, effects: { outputs: [], sideOutputs: [], state: [], touched: [], timers: [], logs: [], ...effects } });

describe("parseAnswer", () => {
  it("takes a well-formed answer", () => {
    const a = parseAnswer(answer({ outputs: [{ value: { card: "c1", n: 2 }, timestamp: 5 }] }), null);
    expect(a).toEqual({ ok: true, effects: expect.objectContaining({ outputs: [{ value: { card: "c1", n: 2 }, timestamp: 5 }] }) });
  });

  it('refuses a "__proto__" field in an output or in state, naming where (it would not survive a checkpoint)', () => {
    // Written as text: JSON.parse makes "__proto__" an own field, as the isolate's JSON answer would.
    const output = '{"ok":true,"effects":{"outputs":[{"value":{"card":"c1","meta":{"__proto__":{"admin":true}}},"timestamp":5}],"sideOutputs":[],"state":[],"touched":[],"timers":[],"logs":[]}}';
    expect(() => parseAnswer(output, null)).toThrow(InvalidEffects);
    expect(() => parseAnswer(output, null)).toThrow('outputs[0].value.meta.__proto__: a field named "__proto__", which Keyflow does not accept');
    const state = '{"ok":true,"effects":{"outputs":[],"sideOutputs":[],"state":[{"name":"s","cell":{"kind":"value","value":{"__proto__":1}}}],"touched":[],"timers":[],"logs":[]}}';
    expect(() => parseAnswer(state, null)).toThrow("state[0].cell.value.__proto__: a field named");
    // As a value, the name is fine.
    expect(parseAnswer(answer({ outputs: [{ value: { note: "__proto__" }, timestamp: 1 }] }), null).ok).toBe(true);
  });
});
