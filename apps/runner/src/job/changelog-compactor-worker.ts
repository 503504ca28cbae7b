// The changelog compactor's worker thread (see changelog-compactor.ts): reads a checkpoint folder,
// replays its chains, and hands the whole states back (one per state file asked for) without a copy.
import { parentPort } from "node:worker_threads";
import type { CompactorReply } from "./changelog-compactor";
import { readCheckpointFolder, statesByFile } from "./checkpoints";

const port = parentPort;
if (port === null) throw new Error("changelog-compactor-worker runs in a worker thread");

port.on("message", (m: { id: number; dir: string; files: string[] }) => {
  readCheckpointFolder(m.dir)
    .then((stored) => {
      const resolved = statesByFile(stored);
      const states = m.files.map((file) => {
        const s = resolved.get(file);
        if (s === undefined) throw new Error(`checkpoint "${m.dir}" has no state file ${file}`);
        // Its own buffer, whole, so that it can be transferred (an encoder's output may be a view of a larger pool).
        return { file, state: s.byteOffset === 0 && s.byteLength === s.buffer.byteLength && s.buffer instanceof ArrayBuffer ? s : s.slice() };
      });
      port.postMessage({ id: m.id, states } satisfies CompactorReply, states.map((s) => s.state.buffer as ArrayBuffer));
    })
    .catch((err: unknown) => port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) } satisfies CompactorReply));
});
