// Resolves a changelog checkpoint's chain into the whole state it stands for, in a worker thread,
// for the next checkpoints to build on (Flink's changelog backend materializes off the task thread
// the same way). Decoding and encoding a whole state takes hundreds of milliseconds per 10 MB: on the
// job's event loop that delayed every record, and taking the whole state from the live job instead
// made it pack every key again (its groups are left behind once it only logs changes).
import { Worker } from "node:worker_threads";
import { workerBundle } from "../exec/worker-bundle";
import { errorMessage, type Logger } from "../log";

/** Run from its bundle (../exec/worker-bundle.ts), or from source through tsx when it cannot be built. */
const MODULE = new URL("./changelog-compactor-worker.ts", import.meta.url);
const FROM_SOURCE = new URL("./changelog-compactor-entry.mjs", import.meta.url);

/** What the worker answers for request `id`. */
export type CompactorReply = { id: number; states: ResolvedState[] } | { id: number; error: string };

/** A state file of a checkpoint folder (`state.bin`, a parallel task's file), its chain replayed. */
export interface ResolvedState {
  file: string;
  state: Uint8Array;
}

export class ChangelogCompactor {
  private worker: Worker | undefined;
  /** Where the worker starts from; built once the first compaction is asked for. */
  private entry: Promise<URL> | undefined;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (states: ResolvedState[]) => void; reject: (err: Error) => void }>();

  constructor(private readonly log?: Logger) {}

  /** The whole snapshots `files` of the checkpoint folder `dir` stand for, their chains replayed (readCheckpointFolder's states). */
  resolve(dir: string, files: string[]): Promise<ResolvedState[]> {
    const id = this.nextId++;
    const entry = (this.entry ??= workerBundle(MODULE).catch((err: unknown) => {
      this.log?.warn(`the changelog compactor starts from source (slower): its bundle could not be built: ${errorMessage(err)}`);
      return FROM_SOURCE;
    }));
    return new Promise<ResolvedState[]>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      void entry.then((url) => {
        // Closed meanwhile: close() has rejected it.
        if (!this.waiting.has(id)) return;
        const w = this.start(url);
        // Held while it works (a job that ended waits for its last compaction), let go while idle.
        w.ref();
        w.postMessage({ id, dir, files });
      });
    });
  }

  /** Stops the worker; what it was resolving is rejected. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w !== undefined) await w.terminate();
    this.failAll(new Error("the changelog compactor was closed"));
  }

  private start(entry: URL): Worker {
    if (this.worker !== undefined) return this.worker;
    const w = new Worker(entry);
    w.on("message", (m: CompactorReply) => {
      const p = this.waiting.get(m.id);
      if (p === undefined) return;
      this.waiting.delete(m.id);
      // Idle between compactions: it must not keep a runner that is done from exiting.
      if (this.waiting.size === 0) w.unref();
      if ("error" in m) p.reject(new Error(m.error));
      else p.resolve(m.states);
    });
    w.on("error", (err) => this.failAll(err));
    w.on("exit", (code) => {
      if (this.worker === w) this.worker = undefined;
      this.failAll(new Error(`the changelog compactor's worker exited (code ${code})`));
    });
    this.worker = w;
    return w;
  }

  private failAll(err: Error): void {
    for (const p of this.waiting.values()) p.reject(err);
    this.waiting.clear();
  }
}
