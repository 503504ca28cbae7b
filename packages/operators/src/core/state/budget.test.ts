import { describe, expect, it } from "vitest";
import type { ListState, MapState, ValueState } from "../api";
import { KeyStateBudget, StateBudgetExceededError } from "./budget";

/** Plain handles over maps, scoped to `scope.key`, as the engine's are. */
function handles(scope: { key: string }) {
  const values = new Map<string, unknown>();
  const lists = new Map<string, unknown[]>();
  const maps = new Map<string, Map<string, unknown>>();
  const value: ValueState<unknown> = { value: () => values.get(scope.key), update: (v) => void values.set(scope.key, v), clear: () => void values.delete(scope.key) };
  const list: ListState<unknown> = {
    get: () => lists.get(scope.key) ?? [],
    add: (v) => void lists.set(scope.key, [...(lists.get(scope.key) ?? []), v]),
    update: (vs) => void lists.set(scope.key, [...vs]),
    clear: () => void lists.delete(scope.key),
  };
  const m = () => maps.get(scope.key) ?? maps.set(scope.key, new Map()).get(scope.key)!;
  const map: MapState<unknown> = {
    get: (k) => m().get(k),
    put: (k, v) => void m().set(k, v),
    remove: (k) => void m().delete(k),
    contains: (k) => m().has(k),
    entries: () => m().entries(),
    keys: () => m().keys(),
    isEmpty: () => m().size === 0,
    clear: () => void maps.delete(scope.key),
  };
  return { value, list, map, lists };
}

describe("KeyStateBudget: the per-key state limit", () => {
  it("fails on the write that takes one key over the limit, naming node and key; other keys are counted apart", () => {
    const scope = { key: "card-1" };
    const h = handles(scope);
    const budget = new KeyStateBudget("remember", 10_000, () => scope.key);
    const value = budget.value("blob", h.value);
    const list = budget.list("seen", h.list);
    value.update("x".repeat(6_000));
    scope.key = "card-2";
    value.update("x".repeat(6_000));
    list.add("y".repeat(3_000));
    expect(() => list.add("y".repeat(3_000))).toThrow(StateBudgetExceededError);
    expect(budget.exceeded?.message).toBe('node "remember": key "card-2" keeps 11.8 KB of state, over the per-key limit of 9.8 KB (settings.maxStateBytesPerKey)');
  });

  it("counts map puts, replacements and removals, and a cleared value frees its key", () => {
    const scope = { key: "k" };
    const h = handles(scope);
    const budget = new KeyStateBudget("n", 5_000, () => scope.key);
    const map = budget.map("m", h.map);
    for (let i = 0; i < 100; i++) map.put("a", "z".repeat(3_000)); // the same entry replaced: no growth
    map.remove("a");
    map.put("b", "z".repeat(3_000));
    const value = budget.value("v", h.value);
    value.update("z".repeat(1_500));
    value.clear();
    value.update("z".repeat(1_500));
    expect(budget.exceeded).toBeUndefined();
  });

  it("judges on the live state: entries that left without a write (TTL) do not count", () => {
    const scope = { key: "k" };
    const h = handles(scope);
    const budget = new KeyStateBudget("n", 5_000, () => scope.key);
    const list = budget.list("l", h.list);
    for (let i = 0; i < 20; i++) {
      list.add("q".repeat(1_000));
      h.lists.set("k", (h.lists.get("k") ?? []).slice(-2)); // expiry, unseen by the handle
    }
    expect(budget.exceeded).toBeUndefined();
  });
});
