// The chains' bookkeeping per state file: whole first, then changes; broken by a checkpoint that
// is never written; restarted at a whole state written in the background, also while in flight.
import { describe, expect, it } from "vitest";
import { ChangelogChains, chainMeta, changelogChains, type ChangelogLink } from "./changelog-chains";

const link = (id: number, bytes: number, file = `chk-${id}/a.bin`): ChangelogLink => ({ file, id, bytes });

describe("ChangelogChains", () => {
  it("starts each file whole, then takes its changes over the links written, one chain per file", () => {
    const c = new ChangelogChains();
    const a1 = c.take("a.bin");
    expect(a1).toEqual({ mode: "whole", chain: undefined });
    c.written("a.bin", a1, link(1, 100));
    expect(c.take("b.bin").mode).toBe("whole");
    const a2 = c.take("a.bin");
    expect(a2).toEqual({ mode: "changes", chain: [link(1, 100)] });
    c.written("a.bin", a2, link(2, 10));
    expect(c.take("a.bin")).toEqual({ mode: "changes", chain: [link(1, 100), link(2, 10)] });
  });

  it("a checkpoint taken and never written (failed, aborted) makes the next one whole", () => {
    const c = new ChangelogChains();
    c.written("a.bin", c.take("a.bin"), link(1, 100));
    expect(c.take("a.bin").mode).toBe("changes"); // checkpoint 2 fails
    expect(c.take("a.bin")).toEqual({ mode: "whole", chain: undefined });
  });

  it("a whole state written in the background starts the chain, dropping the links it stands for", () => {
    const c = new ChangelogChains();
    c.written("a.bin", c.take("a.bin"), link(1, 100));
    c.written("a.bin", c.take("a.bin"), link(2, 10));
    c.written("a.bin", c.take("a.bin"), link(3, 10));
    c.startAt("a.bin", link(2, 100, "shared/heap-4.full"));
    expect(c.take("a.bin").chain).toEqual([link(2, 100, "shared/heap-4.full"), link(3, 10)]);
  });

  it("one written while its file's checkpoint is in flight starts the chain once that is written; not after a whole one", () => {
    const c = new ChangelogChains();
    c.written("a.bin", c.take("a.bin"), link(1, 100));
    const inFlight = c.take("a.bin");
    c.startAt("a.bin", link(1, 100, "shared/heap-2.full"));
    c.written("a.bin", inFlight, link(2, 10));
    expect(c.take("a.bin").chain).toEqual([link(1, 100, "shared/heap-2.full"), link(2, 10)]);

    const d = new ChangelogChains();
    d.written("a.bin", d.take("a.bin"), link(1, 100));
    d.take("a.bin"); // checkpoint 2 never written: 3 is whole
    const whole = d.take("a.bin");
    d.startAt("a.bin", link(1, 100, "shared/heap-2.full"));
    d.written("a.bin", whole, link(3, 100));
    expect(d.take("a.bin").chain).toEqual([link(3, 100)]);
  });

  it("a whole state is due once the changes of all chains outweigh their starts, or a chain is too long", () => {
    const c = new ChangelogChains();
    for (const f of ["a.bin", "b.bin"]) c.written(f, c.take(f), link(1, 100, `chk-1/${f}`));
    c.written("a.bin", c.take("a.bin"), link(2, 150));
    expect(c.baseDue()).toBe(false); // 150 of changes over 200 of state
    c.written("b.bin", c.take("b.bin"), link(2, 60, "chk-2/b.bin"));
    expect(c.baseDue()).toBe(true);
    expect(c.files().sort()).toEqual(["a.bin", "b.bin"]);

    const long = new ChangelogChains();
    long.written("a.bin", long.take("a.bin"), link(0, 1_000_000));
    for (let id = 1; id <= 99; id++) long.written("a.bin", long.take("a.bin"), link(id, 1));
    expect(long.baseDue()).toBe(false); // 100 links
    long.written("a.bin", long.take("a.bin"), link(100, 1));
    expect(long.baseDue()).toBe(true);
  });

  it("metadata lists chains relative to the checkpoint's folder, its own and its tasks'", () => {
    expect(chainMeta([link(1, 1, "chk-1/task-keyed-0.bin"), link(2, 1, "shared/heap-3.full")])).toEqual({ chain: ["../chk-1/task-keyed-0.bin", "../shared/heap-3.full"] });
    expect(changelogChains({ changelog: { chain: ["../a"] }, tasks: [{ changelog: { chain: ["../b", "../c"] } }, { task: "sink" }] })).toEqual(["../a", "../b", "../c"]);
    expect(changelogChains({})).toEqual([]);
    expect(() => changelogChains({ tasks: [{ changelog: { chain: [] } }] })).toThrow();
  });
});
