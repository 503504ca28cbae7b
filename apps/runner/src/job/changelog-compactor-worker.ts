// The changelog compactor's worker thread (see changelog-compactor.ts): reads a checkpoint folder,
// replays its chain, and hands the whole state back without a copy.
import { parentPort } from "node:worker_threads";
import type { CompactorReply } from "./changelog-compactor";
import { readCheckpointFolder } from "./checkpoints";

const port = parentPort;
if (port === null) throw new Error("changelog-compactor-worker runs in a worker thread");

port.on("message", (m: { id: number; dir: string }) => {
  readCheckpointFolder(m.dir).then(
    ({ state }) => {
      if (state === undefined) throw new Error(`checkpoint "${m.dir}" holds the state of parallel tasks, not a changelog`);
      // Its own buffer, whole, so that it can be transferred (an encoder's output may be a view of a larger pool).
      const own = state.byteOffset === 0 && state.byteLength === state.buffer.byteLength && state.buffer instanceof ArrayBuffer ? state : state.slice();
      port.postMessage({ id: m.id, state: own } satisfies CompactorReply, [own.buffer as ArrayBuffer]);
    },
  ).catch((err: unknown) => port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) } satisfies CompactorReply));
});
