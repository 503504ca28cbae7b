import { describe, expect, it } from "vitest";
import { nextCheckpointDue } from "./checkpoint-schedule";

describe("nextCheckpointDue", () => {
  it("keeps a fixed rate: a barrier injected late does not push the next one back", () => {
    expect(nextCheckpointDue(1000, 1007, 1000, 1030)).toBe(2000);
    // Barriers due every second stay due every second whatever each one's lateness.
    let due = 1000;
    for (const late of [3, 9, 1, 14]) due = nextCheckpointDue(due, due + late, 1000, due + late + 40);
    expect(due).toBe(5000);
  });

  it("waits the minimum pause after a checkpoint that ended late", () => {
    expect(nextCheckpointDue(1000, 1005, 1000, 2200)).toBe(2200);
  });

  it("falls back to the start when a whole interval behind (a savepoint asked now, a stalled job): no burst", () => {
    expect(nextCheckpointDue(0, 5000, 1000, 5050)).toBe(6000);
    expect(nextCheckpointDue(1000, 2500, 1000, 2600)).toBe(3500);
  });
});
