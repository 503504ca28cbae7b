import { describe, expect, it } from "vitest";
import { SpaceSaving } from "./heavy-hitters";
import { RingBuffer } from "./ring-buffer";

describe("RingBuffer", () => {
  it("keeps the last N items, oldest first, and counts everything pushed", () => {
    const r = new RingBuffer<number>(3);
    expect(r.toArray()).toEqual([]);
    r.push(1);
    r.push(2);
    expect(r.toArray()).toEqual([1, 2]);
    for (let i = 3; i <= 7; i++) r.push(i);
    expect(r.toArray()).toEqual([5, 6, 7]);
    expect(r.length).toBe(3);
    expect(r.pushed).toBe(7);
  });
  it("refuses a capacity that is not a positive whole number", () => {
    expect(() => new RingBuffer(0)).toThrow(/positive whole capacity/);
    expect(() => new RingBuffer(1.5)).toThrow(/positive whole capacity/);
  });
});

describe("SpaceSaving", () => {
  it("counts exactly while the keys fit", () => {
    const s = new SpaceSaving(4);
    for (const k of ["a", "b", "a", "c", "a", "b"]) s.offer(k);
    expect(s.top()).toEqual([
      { key: "a", count: 3, error: 0 },
      { key: "b", count: 2, error: 0 },
      { key: "c", count: 1, error: 0 },
    ]);
    expect(s.total).toBe(6);
  });

  it("keeps every key above total / capacity in a skewed stream, counts within their error", () => {
    const s = new SpaceSaving(10);
    const truth = new Map<string, number>();
    // A deterministic skewed stream: "hot" is 30 % of 10 000 records, "warm" 10 %, the rest spread over 2 000 keys.
    for (let i = 0; i < 10_000; i++) {
      const key = i % 10 < 3 ? "hot" : i % 10 === 3 ? "warm" : `k${(i * 7919) % 2000}`;
      truth.set(key, (truth.get(key) ?? 0) + 1);
      s.offer(key);
    }
    const top = s.top(2);
    expect(top.map((h) => h.key)).toEqual(["hot", "warm"]);
    for (const h of s.top()) {
      const t = truth.get(h.key) ?? 0;
      expect(h.count).toBeGreaterThanOrEqual(t);
      expect(h.count - h.error).toBeLessThanOrEqual(t);
    }
    expect(s.top().length).toBe(10);
  });

  it("merges the sketches of several subtasks", () => {
    const a = new SpaceSaving(3);
    const b = new SpaceSaving(3);
    for (const k of ["x", "x", "y"]) a.offer(k);
    for (const k of ["x", "z", "z", "z"]) b.offer(k);
    const m = SpaceSaving.merge(2, [a, b]);
    expect(m.top()).toEqual([
      { key: "x", count: 3, error: 0 },
      { key: "z", count: 3, error: 0 },
    ]);
    expect(m.total).toBe(7);
  });
});

describe("KeySkew", () => {
  it("counts records per subtask, flags one above twice the mean, and lists the hottest keys with their subtask", async () => {
    const { KeySkew, skewedSubtasks } = await import("./skew");
    const s = new KeySkew(4, 1);
    for (let i = 0; i < 100; i++) s.offer("vel", 2, "card-hot");
    for (let i = 0; i < 30; i++) s.offer("vel", i % 4, `card-${i}`);
    const [vel] = s.report(3);
    expect(vel?.records).toEqual([8, 8, 107, 7]);
    expect(vel?.mean).toBe(32.5);
    expect(vel?.skewedSubtasks).toEqual([2]);
    expect(vel?.hotKeys[0]).toMatchObject({ key: "card-hot", count: 100, subtask: 2 });
    expect(vel?.hotKeys[0]?.share).toBeCloseTo(100 / 130, 6);
    expect(skewedSubtasks([10, 10, 10, 10])).toEqual([]);
    expect(skewedSubtasks([0, 0])).toEqual([]);
  });
});

describe("KeySkew sampling", () => {
  it("counts records exactly and still finds a hot key when only about one in 16 records reaches the sketch", async () => {
    const { KeySkew } = await import("./skew");
    const s = new KeySkew(2);
    for (let i = 0; i < 64_000; i++) s.offer("byCard", i % 2, i % 4 === 0 ? "card-hot" : `card-${i % 3001}`);
    const [op] = s.report(1);
    expect(op?.records).toEqual([32_000, 32_000]);
    expect(op?.hotKeys[0]).toMatchObject({ key: "card-hot", subtask: 0 });
    // 16 000 true records, estimated from a sample.
    expect(op?.hotKeys[0]?.count).toBeGreaterThan(12_000);
    expect(op?.hotKeys[0]?.count).toBeLessThan(20_000 + (op?.hotKeys[0]?.error ?? 0));
  });
});
