// Golden pipelines (STYLE.md item 9, issue 3: "`keyflow run` on file pipelines covers each operator end
// to end"): every folder of examples/golden/ holds a pipeline in the format the canvas saves, its input
// files and, under expected/, the exact output of each file sink (and of the dead-letter file),
// computed by hand from the operators' documented semantics. Each case runs through the real CLI:
//
//  1. uninterrupted: the output files equal expected/, line by line, in emission order;
//  2. checkpoint and restore: a first run reads only the first half of every input file with a
//     checkpoint after each batch; the checkpoints taken after any source reached its end are deleted
//     (as if the process had died right after the newest mid-stream checkpoint), the full inputs are put
//     back, and a second run resumes from that checkpoint. Its output must equal the uninterrupted
//     run's byte for byte: the engine's state (buffers, timers, watermarks) went to disk and back.
//
// examples/golden/invalid/<case>.json must be refused with exit code 1 and exactly the stderr lines of
// <case>.expected.txt, without a stack trace.
//
// A case folder may hold golden.json: { "unordered": ["out/x.jsonl"] } names sink files whose order is
// not specified (compared sorted; the case's README says why).
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { LocalJob, operatorTypes, type LocalJobOptions } from "@keyflow/operators";
import { describe, expect, it } from "vitest";
import { RUNNER_DIR, runCli, type CliResult } from "../test/run-cli";
import { readCheckpointFolder } from "./job/checkpoints";

const GOLDEN = path.resolve(RUNNER_DIR, "..", "..", "examples", "golden");
const INVALID = path.join(GOLDEN, "invalid");

/**
 * Cases that fail because of a known runner or engine bug. The test is `it.fails`: it turns red the day
 * the bug is fixed, so that the case is moved back to the passing ones.
 */
const KNOWN_BUGS: Readonly<Record<string, string>> = {};

/** One CLI costs about a second of CPU (tsx loads the sources); run a few at once, not all. */
const POOL = Math.max(2, Math.min(4, availableParallelism() + 1));
const TIMEOUT_MS = 120_000;

const goldenCases = readdirSync(GOLDEN, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(path.join(GOLDEN, d.name, "pipeline.json")))
  .map((d) => d.name)
  .sort();
const invalidCases = readdirSync(INVALID)
  .filter((f) => f.endsWith(".json"))
  .map((f) => f.slice(0, -".json".length))
  .sort();

// ---- a small pool of CLI processes ------------------------------------------------------------

let running = 0;
const waiting: Array<() => void> = [];

async function pooled<T>(task: () => Promise<T>): Promise<T> {
  if (running < POOL) running++;
  else await new Promise<void>((resolve) => waiting.push(resolve)); // a finishing task hands us its slot
  try {
    return await task();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

const cli = (args: readonly string[], cwd?: string): Promise<CliResult> => pooled(() => runCli(args, cwd === undefined ? {} : { cwd }));

/** A run that must succeed: exit 0, no stack trace, and nothing on stderr but validator warnings. */
function expectSuccess(r: CliResult, what: string): void {
  const detail = `${what}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
  expect(r.code, detail).toBe(0);
  expect(r.stderr, detail).not.toMatch(/\n\s+at .+:\d+:\d+/);
  const unexpected = r.stderr.split("\n").filter((l) => l !== "" && !/: warning: /.test(l));
  expect(unexpected, detail).toEqual([]);
}

// ---- files --------------------------------------------------------------------------------------

interface CaseConfig {
  unordered: string[];
}

function caseConfig(name: string): CaseConfig {
  const file = path.join(GOLDEN, name, "golden.json");
  if (!existsSync(file)) return { unordered: [] };
  const raw = JSON.parse(readFileSync(file, "utf8")) as { unordered?: unknown };
  return { unordered: Array.isArray(raw.unordered) ? raw.unordered.filter((f): f is string => typeof f === "string") : [] };
}

/** The case folder copied to a fresh temporary folder (runs write `out/` and checkpoints there). */
function copyCase(name: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), `keyflow-golden-${name}-`));
  const expected = path.join(GOLDEN, name, "expected");
  cpSync(path.join(GOLDEN, name), dir, { recursive: true, filter: (src) => src !== expected });
  return dir;
}

/** Every visible file under `root` (staging and pending files start with a dot), by relative path. */
function filesUnder(root: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(root)) return out;
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith(".")) continue;
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else out.set(path.relative(root, full).split(path.sep).join("/"), readFileSync(full, "utf8"));
    }
  };
  walk(root);
  return out;
}

/** The sink outputs of a run in `dir`: sinks write under out/ (the dead-letter file goes beside the first). */
const outputsOf = (dir: string): Map<string, string> => new Map([...filesUnder(path.join(dir, "out"))].map(([f, text]) => [`out/${f}`, text]));

const expectedOf = (name: string): Map<string, string> => filesUnder(path.join(GOLDEN, name, "expected"));

/** JSON with sorted keys: equal values give equal strings (for sorting unordered outputs). */
function canonical(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(",")}}`;
}

/** The V8 text inside "is not valid JSON (...)" varies with the Node version; expected files write a placeholder. */
function normalizeDeadLetter(v: unknown): unknown {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
  const o = { ...(v as Record<string, unknown>) };
  if (typeof o.reason === "string") o.reason = o.reason.replace(/is not valid JSON \(.*\)$/, "is not valid JSON (<JSON.parse error>)");
  return o;
}

function records(file: string, text: string, unordered: boolean): unknown[] {
  const parsed = text
    .split("\n")
    .filter((l) => l !== "")
    .map((l, i) => {
      try {
        return JSON.parse(l) as unknown;
      } catch {
        throw new Error(`${file}, line ${i + 1} is not JSON: ${l}`);
      }
    })
    .map((v) => (file.endsWith(".dlq.jsonl") ? normalizeDeadLetter(v) : v));
  return unordered ? parsed.sort((a, b) => (canonical(a) < canonical(b) ? -1 : canonical(a) > canonical(b) ? 1 : 0)) : parsed;
}

/**
 * Every expected file has its records, in order (sorted for unordered files); every other output file
 * is empty. A missing file counts as empty (a sink that never received a record).
 */
function expectOutputs(actual: Map<string, string>, expected: Map<string, string>, config: CaseConfig, what: string): void {
  for (const [file, text] of expected) {
    const unordered = config.unordered.includes(file);
    expect(records(file, actual.get(file) ?? "", unordered), `${what}: ${file}`).toEqual(records(file, text, unordered));
  }
  for (const [file, text] of actual) {
    if (!expected.has(file)) expect(text, `${what}: ${file} is not in expected/, so it must be empty`).toBe("");
  }
}

// ---- runs -----------------------------------------------------------------------------------------

interface PipelineDoc {
  nodes: Array<{ id: string; type: string; params?: Record<string, unknown> }>;
  settings?: Record<string, unknown>;
}

const readDoc = (dir: string): PipelineDoc => JSON.parse(readFileSync(path.join(dir, "pipeline.json"), "utf8")) as PipelineDoc;

/** The input files of a pipeline's file sources, relative to its folder. */
function inputFiles(doc: PipelineDoc): string[] {
  return doc.nodes.filter((n) => n.type === "source.file" && typeof n.params?.path === "string").map((n) => n.params?.path as string);
}

const referenceRuns = new Map<string, Promise<Map<string, string>>>();

/** The uninterrupted run of a case (shared by its two tests). */
function referenceRun(name: string): Promise<Map<string, string>> {
  let run = referenceRuns.get(name);
  if (run === undefined) {
    run = (async () => {
      const dir = copyCase(name);
      const r = await cli(["run", path.join(dir, "pipeline.json")]);
      expectSuccess(r, `keyflow run ${name}/pipeline.json`);
      const outputs = outputsOf(dir);
      rmSync(dir, { recursive: true, force: true });
      return outputs;
    })();
    referenceRuns.set(name, run);
  }
  return run;
}

interface CheckpointInfo {
  id: number;
  dir: string;
  positions: Record<string, { byte?: number }>;
}

function committedCheckpoints(ckpt: string): CheckpointInfo[] {
  if (!existsSync(ckpt)) return [];
  return readdirSync(ckpt)
    .map((n) => /^chk-(\d+)$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null && existsSync(path.join(ckpt, m[0], "_committed")))
    .map((m) => {
      const dir = path.join(ckpt, m[0]);
      const meta = JSON.parse(readFileSync(path.join(dir, "_metadata.json"), "utf8")) as { sources: CheckpointInfo["positions"] };
      return { id: Number(m[1]), dir, positions: meta.sources };
    })
    .sort((a, b) => a.id - b.id);
}

/** Restoring a snapshot only to read it: process.custom gets a stand-in for the runner's sandbox. */
const INSPECT_ONLY: LocalJobOptions = { operatorServices: { customFunctionFactory: () => ({ processElement() {} }) } };

/**
 * The newest checkpoint taken before any source reached the end of its (truncated) input, and after at
 * least one source read something. End of input is visible in the engine's snapshot: the source's
 * watermark is then +infinity.
 */
async function midStreamCheckpoint(ckpt: string, doc: PipelineDoc): Promise<CheckpointInfo | undefined> {
  const sources = doc.nodes.filter((n) => n.type.startsWith("source.")).map((n) => n.id);
  for (const c of committedCheckpoints(ckpt).reverse()) {
    // Read as a restore reads it (a changelog checkpoint's state.bin holds only its changes).
    const { state } = await readCheckpointFolder(c.dir);
    if (state === undefined) throw new Error(`checkpoint "${c.dir}" of a single-threaded run has no state.bin`);
    const metrics = LocalJob.restore(doc, state, INSPECT_ONLY).metrics();
    if (sources.some((id) => metrics[id]?.watermark === Number.POSITIVE_INFINITY)) continue;
    return Object.values(c.positions).some((p) => (p.byte ?? 0) > 0) ? c : undefined;
  }
  return undefined;
}

/** The first half of a file's lines (a byte prefix of it). */
function firstHalf(text: string): string {
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.slice(0, Math.floor(lines.length / 2)).map((l) => `${l}\n`).join("");
}

/** Run on the first half of the inputs, keep only the newest mid-stream checkpoint, resume on the full inputs. */
async function resumedRun(name: string): Promise<Map<string, string>> {
  for (let attempt = 1; ; attempt++) {
    const dir = copyCase(name);
    const pipeline = path.join(dir, "pipeline.json");
    const doc = readDoc(dir);
    // Keep every checkpoint of the first run, so the mid-stream one cannot be rotated away.
    writeFileSync(pipeline, JSON.stringify({ ...doc, settings: { ...doc.settings, retainedCheckpoints: 1000 } }, null, 2));
    const inputs = inputFiles(doc).map((f) => ({ file: path.join(dir, f), full: readFileSync(path.join(dir, f), "utf8") }));
    for (const i of inputs) writeFileSync(i.file, firstHalf(i.full));
    const ckpt = path.join(dir, "ckpt");

    const first = await cli(["run", pipeline, "--checkpoint-dir", ckpt, "--checkpoint-interval", "1"]);
    expectSuccess(first, `${name}: first run, on the first half of the inputs`);
    const chosen = await midStreamCheckpoint(ckpt, doc);
    if (chosen === undefined) {
      rmSync(dir, { recursive: true, force: true });
      if (attempt < 3) continue; // every batch was processed before a checkpoint was due: try again
      throw new Error(`${name}: no checkpoint was taken between the first batch and the end of the input in ${attempt} attempts`);
    }
    // "Crash" right after the chosen checkpoint: later checkpoints (and the output they committed) never happened.
    for (const c of committedCheckpoints(ckpt)) if (c.id > chosen.id) rmSync(c.dir, { recursive: true, force: true });
    for (const i of inputs) writeFileSync(i.file, i.full);

    const second = await cli(["run", pipeline, "--checkpoint-dir", ckpt]);
    expectSuccess(second, `${name}: second run, resumed on the full inputs`);
    expect(second.stdout).toContain(`(resumed from checkpoint ${chosen.id})`);
    const outputs = outputsOf(dir);
    rmSync(dir, { recursive: true, force: true });
    return outputs;
  }
}

// ---- the tests --------------------------------------------------------------------------------------

describe.concurrent("golden pipelines through keyflow run", () => {
  it("covers every operator of the catalog (Kafka and demo I/O aside)", () => {
    const used = new Set(goldenCases.flatMap((name) => readDoc(path.join(GOLDEN, name)).nodes.map((n) => n.type)));
    const uncovered = operatorTypes.filter((t) => !used.has(t) && t !== "source.kafka" && t !== "sink.kafka" && t !== "source.demo");
    expect(uncovered).toEqual([]);
  });

  for (const name of goldenCases) {
    const bug = KNOWN_BUGS[name];
    const test = bug === undefined ? it : it.fails;
    const suffix = bug === undefined ? "" : ` [known bug: ${bug}]`;
    const config = caseConfig(name);

    test(`${name}: the output equals expected/${suffix}`, { timeout: TIMEOUT_MS }, async () => {
      expectOutputs(await referenceRun(name), expectedOf(name), config, name);
    });

    test(`${name}: checkpoint, restore and resume give the uninterrupted output${suffix}`, { timeout: TIMEOUT_MS }, async () => {
      const [reference, resumed] = await Promise.all([referenceRun(name), resumedRun(name)]);
      expectOutputs(resumed, expectedOf(name), config, `${name} (resumed)`);
      for (const file of new Set([...reference.keys(), ...resumed.keys()])) {
        if (config.unordered.includes(file)) continue; // compared sorted above
        expect(resumed.get(file) ?? "", `${name}: ${file} after resume, byte for byte`).toBe(reference.get(file) ?? "");
      }
    });
  }
});

describe.concurrent("golden invalid pipelines: keyflow run refuses them, naming the node", () => {
  for (const name of invalidCases) {
    it(name, { timeout: TIMEOUT_MS }, async () => {
      const dir = mkdtempSync(path.join(tmpdir(), `keyflow-golden-invalid-`));
      cpSync(path.join(INVALID, `${name}.json`), path.join(dir, `${name}.json`));
      const r = await cli(["run", `${name}.json`], dir);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
      expect(r.stderr).toBe(readFileSync(path.join(INVALID, `${name}.expected.txt`), "utf8"));
      expect(r.stdout).toBe("");
      expect(existsSync(path.join(dir, "out"))).toBe(false);
      rmSync(dir, { recursive: true, force: true });
    });
  }
});
