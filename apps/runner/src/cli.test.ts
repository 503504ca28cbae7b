// The CLI's error paths, through the real command: a user mistake exits non-zero with one line per
// problem naming the file, line/column or node, and never a stack trace.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../test/run-cli";

const dir = mkdtempSync(path.join(tmpdir(), "keyflow-cli-"));

function pipelineFile(name: string, doc: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, typeof doc === "string" ? doc : JSON.stringify(doc, null, 2));
  return file;
}

const node = (id: string, type: string, params: Record<string, unknown> = {}) => ({ id, type, params });
const fileSource = node("src", "source.file", { path: "in.jsonl", timestampField: "ts" });
const fileSink = node("out", "sink.file", { path: "out.jsonl" });
const doc = (nodes: unknown[], edges: { from: string; to: string }[]) => ({ format: "keyflow.pipeline/v1", name: "cli-test", nodes, edges });

function expectUserError(r: CliResult): void {
  expect(r.code).not.toBe(0);
  expect(r.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/); // no stack frames
}

describe.each(["validate", "run"])("keyflow %s refuses an invalid pipeline", (command) => {
  it("an unknown operator type, naming the node", async () => {
    const f = pipelineFile(`unknown-${command}.json`, doc([fileSource, node("weird", "no.such.operator"), fileSink], [{ from: "src", to: "weird" }, { from: "weird", to: "out" }]));
    const r = await runCli([command, f]);
    expectUserError(r);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/node "weird"/);
    expect(r.stderr).toMatch(/no\.such\.operator/);
  });

  it("bad params, naming the node and the param", async () => {
    const f = pipelineFile(`params-${command}.json`, doc([fileSource, node("big", "filter", { expression: 42 }), fileSink], [{ from: "src", to: "big" }, { from: "big", to: "out" }]));
    const r = await runCli([command, f]);
    expectUserError(r);
    expect(r.stderr).toMatch(/node "big"/);
    expect(r.stderr).toMatch(/expression/);
  });

  it("a keyed operator without keyBy upstream, naming the node", async () => {
    const f = pipelineFile(
      `keyed-${command}.json`,
      doc([fileSource, node("vel", "velocity", { threshold: 3, windowMs: "10m" }), fileSink], [{ from: "src", to: "vel" }, { from: "vel", to: "out" }]),
    );
    const r = await runCli([command, f]);
    expectUserError(r);
    expect(r.stderr).toMatch(/node "vel"/);
    expect(r.stderr).toMatch(/key/i);
  });

  it("a cycle, naming its nodes", async () => {
    const f = pipelineFile(
      `cycle-${command}.json`,
      doc(
        [fileSource, node("a", "filter", { expression: "amount > 1" }), node("b", "filter", { expression: "amount > 2" }), fileSink],
        [{ from: "src", to: "a" }, { from: "a", to: "b" }, { from: "b", to: "a" }, { from: "b", to: "out" }],
      ),
    );
    const r = await runCli([command, f]);
    expectUserError(r);
    expect(r.stderr).toMatch(/cycle/i);
    expect(r.stderr).toMatch(/"a"/);
    expect(r.stderr).toMatch(/"b"/);
  });

  it("reports every problem, one line each", async () => {
    const f = pipelineFile(
      `many-${command}.json`,
      doc([fileSource, node("x", "no.such.operator"), node("big", "filter", {}), fileSink], [{ from: "src", to: "x" }, { from: "x", to: "big" }, { from: "big", to: "out" }]),
    );
    const r = await runCli([command, f]);
    expectUserError(r);
    const lines = r.stderr.trim().split("\n");
    expect(lines.some((l) => l.includes('node "x"'))).toBe(true);
    expect(lines.some((l) => l.includes('node "big"'))).toBe(true);
  });
});

describe("keyflow reports unreadable files", () => {
  it("a missing file names the file", async () => {
    const r = await runCli(["run", path.join(dir, "nope.json")]);
    expectUserError(r);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/nope\.json: cannot read the pipeline file: no such file/);
  });

  it("bad JSON names the file, line and column", async () => {
    const f = pipelineFile("broken.json", '{\n  "format": "keyflow.pipeline/v1",\n  "name": "x",\n  "nodes": [ }\n}\n');
    const r = await runCli(["validate", f]);
    expectUserError(r);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/broken\.json:4:14: invalid JSON: expected a value, found '}'/);
  });

  it("not a pipeline document", async () => {
    const f = pipelineFile("not-a-pipeline.json", { hello: "world" });
    const r = await runCli(["validate", f]);
    expectUserError(r);
    expect(r.stderr).toMatch(/format/);
  });

  it("bad usage exits 2 with the usage", async () => {
    const r = await runCli(["run", "--parallelism"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/usage:/);
    const r2 = await runCli(["frobnicate"]);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/unknown command "frobnicate"/);
  });

  it("validate accepts a valid pipeline", async () => {
    const f = pipelineFile("ok.json", doc([fileSource, node("big", "filter", { expression: "amount > 500" }), fileSink], [{ from: "src", to: "big" }, { from: "big", to: "out" }]));
    const r = await runCli(["validate", f]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/pipeline "cli-test" is valid \(3 nodes, 2 edges\)/);
  });
});

describe("keyflow run keeps files in the data folder (the pipeline file's) unless --allow-paths", () => {
  const outside = mkdtempSync(path.join(tmpdir(), "keyflow-cli-outside-"));
  const input = path.join(outside, "in.jsonl");
  writeFileSync(input, '{"amount":900,"ts":1}\n{"amount":5,"ts":2}\n');
  const pipeline = (name: string, src: string, out: string) =>
    pipelineFile(name, doc([node("src", "source.file", { path: src, timestampField: "ts" }), node("big", "filter", { expression: "amount > 500" }), node("out", "sink.file", { path: out })], [{ from: "src", to: "big" }, { from: "big", to: "out" }]));

  it("refuses an absolute path or one leading out, naming node and param", async () => {
    const abs = await runCli(["run", pipeline("abs.json", input, "out-abs.jsonl")]);
    expectUserError(abs);
    expect(abs.stderr).toContain('error: node "src": param "path" must be a path inside the data folder, not an absolute path');
    const up = await runCli(["run", pipeline("up.json", path.relative(dir, input), "out-up.jsonl")]);
    expectUserError(up);
    expect(up.stderr).toContain('error: node "src": param "path" must be a path inside the data folder, not one that leaves it');
  });

  it("with --allow-paths DIR, reads and writes anywhere inside DIR, absolute paths included, and nowhere else", async () => {
    const out = path.join(outside, "alerts.jsonl");
    const ok = await runCli(["run", pipeline("allowed.json", input, out), "--allow-paths", outside]);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(readFileSync(out, "utf8")).toBe('{"amount":900,"ts":1}\n');
    const elsewhere = await runCli(["run", pipeline("elsewhere.json", "/etc/hostname", out), "--allow-paths", outside]);
    expectUserError(elsewhere);
    expect(elsewhere.stderr).toContain(`node "src": param "path" "/etc/hostname" must be a path inside the allowed folder ${outside}; it leads out of it (an absolute path)`);
  });
});
