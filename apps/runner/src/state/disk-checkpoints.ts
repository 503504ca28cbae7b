// The disk backend's part of checkpoints, restores, savepoints and retention: which chains a task
// replays (by key-group range when rescaled), a savepoint's self-contained full files, the
// conversion of a disk checkpoint to the heap format, and which shared files retention may delete.
import { mkdtempSync, promises as fs, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { keyGroupOf, keyGroupRangeContains, LocalJob, mergeJobSnapshots, type KeyGroupRange, type PipelineDocument } from "@keyflow/operators";
import { isNotFound } from "../io/file/atomic";
import { diskChainSchema, type DiskChain } from "./chain-files";
import { DiskStateStore } from "./disk-store";
import { changelogChains } from "../job/changelog-chains";

/** The folder under a checkpoint folder's parent where chain files live (Flink's `shared/`). */
export const SHARED_DIR = "shared";

/** What a checkpoint's metadata says about disk state (the fields of ../job/checkpoints.ts this module reads). */
export interface DiskMetaView {
  id: number;
  maxParallelism?: number | undefined;
  disk?: DiskChain | undefined;
  tasks?: Array<{ task: string; subtask: number; keyGroups?: [number, number] | undefined; disk?: DiskChain | undefined }> | undefined;
}

export interface ChainRef {
  chain: DiskChain;
  resolve: (file: string) => string;
}

export function hasDiskState(meta: DiskMetaView): boolean {
  return meta.disk !== undefined || (meta.tasks ?? []).some((t) => t.disk !== undefined);
}

/** The chains a task owning `range` (all key groups when undefined) replays from the checkpoint in `dir`. */
export function chainsFor(meta: DiskMetaView, dir: string, range: KeyGroupRange | undefined): ChainRef[] {
  const resolve = (f: string) => path.resolve(dir, f);
  if (meta.disk) return [{ chain: meta.disk, resolve }];
  const out: ChainRef[] = [];
  for (const t of meta.tasks ?? []) {
    if (!t.disk) continue;
    if (range && t.keyGroups && (t.keyGroups[0] > range.end || t.keyGroups[1] < range.start)) continue;
    out.push({ chain: t.disk, resolve });
  }
  return out;
}

/**
 * A fresh store for one task in `dir`, with the state of `restored` (its key groups only when
 * `range` is given) replayed into it.
 */
export function openDiskStore(opts: {
  dir: string;
  label: string;
  restored?: { meta: DiskMetaView; dir: string } | undefined;
  range?: KeyGroupRange | undefined;
  maxParallelism: number;
}): DiskStateStore {
  const store = new DiskStateStore({ dir: opts.dir, label: opts.label });
  try {
    if (opts.restored && hasDiskState(opts.restored.meta)) {
      const range = opts.range;
      const keep = range ? (k: string) => keyGroupRangeContains(range, keyGroupOf(k, opts.maxParallelism)) : undefined;
      store.load(chainsFor(opts.restored.meta, opts.restored.dir, range), keep);
    }
  } catch (err) {
    store.close();
    throw err;
  }
  return store;
}

/** Where a job's task stores live: KEYFLOW_STATE_DIR, else the system's temporary folder. */
export function stateDirFor(jobId: string): string {
  const root = process.env.KEYFLOW_STATE_DIR ?? path.join(tmpdir(), "keyflow-state");
  return path.join(root, `${jobId.replace(/[^A-Za-z0-9._-]/g, "_")}-${process.pid}`);
}

/** Replays `chains` into a scratch store and writes them as one full file into `destDir`. */
function compact(chains: ChainRef[], destDir: string, label: string, id: number): DiskChain {
  const scratch = mkdtempSync(path.join(tmpdir(), "keyflow-compact-"));
  const store = new DiskStateStore({ dir: path.join(scratch, "store"), label });
  try {
    store.load(chains);
    return store.writeCheckpoint(id, destDir, ".", "savepoint");
  } finally {
    store.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** A savepoint's copy of disk state: each chain compacted into one full file inside the savepoint folder `tmp`. */
export function savepointDiskState<M extends DiskMetaView>(meta: M, fromDir: string, tmp: string): M {
  if (!hasDiskState(meta)) return meta;
  const resolve = (f: string) => path.resolve(fromDir, f);
  if (meta.disk) return { ...meta, disk: compact([{ chain: meta.disk, resolve }], tmp, "job", meta.id) };
  return {
    ...meta,
    tasks: meta.tasks?.map((t) => (t.disk ? { ...t, disk: compact([{ chain: t.disk, resolve }], tmp, `${t.task}-${t.subtask}`, meta.id) } : t)),
  };
}

/**
 * The heap-format job snapshot of a disk checkpoint (for a restore into the heap backend): its
 * state replayed into a scratch store under a job of `doc`, snapshotted with every entry.
 */
export function materializeDiskState(doc: PipelineDocument, meta: DiskMetaView, dir: string, snapshot: Uint8Array): Uint8Array {
  const scratch = mkdtempSync(path.join(tmpdir(), "keyflow-materialize-"));
  const store = openDiskStore({ dir: path.join(scratch, "store"), label: "job", restored: { meta, dir }, range: undefined, maxParallelism: meta.maxParallelism ?? doc.settings.maxParallelism });
  try {
    const job = LocalJob.restore(doc, snapshot, { stateBackend: (id) => store.backendFor(id), operatorServices: { customFunctionFactory: () => ({ processElement() {} }) } });
    return job.snapshot();
  } finally {
    store.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Merged task snapshots of a parallel checkpoint, or its single state (what a single-threaded restore reads). */
export function mergedSnapshot(state: Uint8Array | undefined, tasks: ReadonlyArray<{ state: Uint8Array }> | undefined): Uint8Array {
  return state ?? mergeJobSnapshots((tasks ?? []).map((t) => ({ bytes: t.state, primary: true })));
}

/**
 * Retention: deletes chain files in `<location>/shared` that no retained checkpoint lists, except
 * files of checkpoints newer than `newest` (a checkpoint still being written).
 */
export async function pruneSharedFiles(location: string, retainedDirs: readonly string[], newest: number): Promise<void> {
  const shared = path.join(location, SHARED_DIR);
  let names: string[];
  try {
    names = await fs.readdir(shared);
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
  const needed = new Set<string>();
  for (const dir of retainedDirs) {
    let meta: DiskMetaView;
    try {
      const raw = JSON.parse(await fs.readFile(path.join(dir, "_metadata.json"), "utf8")) as { disk?: unknown; tasks?: Array<{ disk?: unknown }> };
      const chains = [raw.disk, ...(raw.tasks ?? []).map((t) => t.disk)].filter((c) => c !== undefined).map((c) => diskChainSchema.parse(c));
      meta = { id: 0, tasks: chains.map((disk, i) => ({ task: "keyed", subtask: i, disk })) };
      // A heap changelog checkpoint's whole states may be files here too (written in the background).
      for (const f of changelogChains(raw)) needed.add(path.resolve(dir, f));
    } catch (err) {
      // A folder without readable metadata (being written, or damaged) may need any file: keep all.
      if (isNotFound(err)) return;
      throw err;
    }
    for (const c of chainsFor(meta, dir, undefined)) for (const f of c.chain.files) needed.add(c.resolve(f.file));
  }
  for (const n of names) {
    const m = /-(\d{10})-[^.]*\.(full|delta)$/.exec(n);
    if (!m || Number(m[1]) > newest) continue;
    const file = path.join(shared, n);
    // `needed` holds resolved paths: a relative location must not make every file look unneeded.
    if (!needed.has(path.resolve(file))) await fs.rm(file, { force: true });
  }
}
