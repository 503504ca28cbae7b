import { describe, expect, it } from "vitest";
import { classifyBottleneck, pressureLevel } from "./bottleneck";

// source → parse → keyBy → vel → sink, plus a side branch source → audit.
const nodes = ["source", "parse", "keyBy", "vel", "sink", "audit"].map((id) => ({ id }));
const edges = [
  { from: "source", to: "parse" },
  { from: "parse", to: "keyBy" },
  { from: "keyBy", to: "vel" },
  { from: "vel", to: "sink" },
  { from: "vel:late", to: "sink" },
  { from: "source", to: "audit" },
];
const t = (busy: number, bp: number) => ({ busyTimeMsPerSecond: busy, backPressuredTimeMsPerSecond: bp });

describe("pressureLevel", () => {
  it("uses Flink's thresholds", () => {
    expect(pressureLevel(0)).toBe("ok");
    expect(pressureLevel(0.1)).toBe("ok");
    expect(pressureLevel(0.11)).toBe("low");
    expect(pressureLevel(0.5)).toBe("low");
    expect(pressureLevel(0.51)).toBe("high");
  });
});

describe("classifyBottleneck", () => {
  it("marks the saturated node as the cause and the backpressured nodes above it as waiting", () => {
    const v = classifyBottleneck(nodes, edges, {
      source: t(100, 850),
      parse: t(150, 800),
      keyBy: t(200, 700),
      vel: t(970, 0),
      sink: t(30, 0),
      audit: t(20, 0),
    });
    expect(v.vel).toMatchObject({ role: "cause", backpressure: "ok", busyRatio: 0.97 });
    for (const id of ["source", "parse", "keyBy"]) expect(v[id]).toMatchObject({ role: "waiting", backpressure: "high", causes: ["vel"] });
    expect(v.sink?.role).toBe("ok");
    expect(v.audit?.role).toBe("ok");
  });

  it("does not blame a busy node that is itself backpressured: the cause is further down", () => {
    const v = classifyBottleneck(nodes, edges, { source: t(50, 900), parse: t(60, 900), keyBy: t(80, 900), vel: t(600, 400), sink: t(990, 0) });
    expect(v.sink?.role).toBe("cause");
    expect(v.vel).toMatchObject({ role: "waiting", backpressure: "low", causes: ["sink"] });
    expect(v.source?.role).toBe("waiting");
  });

  it("calls a saturated node with nothing backpressured above it busy, not a cause", () => {
    const v = classifyBottleneck(nodes, edges, { source: t(10, 0), parse: t(10, 50), vel: t(950, 0) });
    expect(v.vel?.role).toBe("busy");
    expect(v.parse).toMatchObject({ role: "ok", backpressure: "ok" });
  });

  it("leaves backpressure without a known cause as backpressured", () => {
    const v = classifyBottleneck(nodes, edges, { source: t(10, 700), parse: t(10, 600) });
    expect(v.source?.role).toBe("backpressured");
    expect(v.parse?.role).toBe("backpressured");
  });

  it("says nothing about nodes without figures", () => {
    const v = classifyBottleneck(nodes, edges, { vel: { busyTimeMsPerSecond: 100 } });
    expect(Object.keys(v)).toEqual(["vel"]);
    expect(v.vel).toEqual({ role: "ok", busyRatio: 0.1 });
    expect(classifyBottleneck(nodes, edges, {})).toEqual({});
  });

  it("finds one cause per branch when two sinks are saturated", () => {
    const n = ["a", "b", "c", "d"].map((id) => ({ id }));
    const e = [
      { from: "a", to: "b" },
      { from: "a", to: "c" },
      { from: "c", to: "d" },
    ];
    const v = classifyBottleneck(n, e, { a: t(100, 800), b: t(900, 0), c: t(100, 700), d: t(990, 0) });
    expect(v.b?.role).toBe("cause");
    expect(v.d?.role).toBe("cause");
    expect(v.a?.causes).toEqual(["b", "d"]);
    expect(v.c?.causes).toEqual(["d"]);
  });
});
