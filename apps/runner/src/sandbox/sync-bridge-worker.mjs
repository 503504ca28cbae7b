// Entry of a SyncBridge's worker thread (./sync-bridge.ts): registers tsx's ESM loader in this
// thread (as bin/keyflow.mjs does for the CLI), loads the handler module named by the job thread,
// and serves its methods over the shared buffer. A failure to load is reported through the buffer
// (flag DEAD, the header layout of ./sync-bridge.ts) so that the blocked job thread hears of it.
import { parentPort, workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

const FLAG = 0;
const LENGTH = 4;
const DEAD = 2;
const HEADER_BYTES = 32;

/** @param {string} why */
function reportDead(why) {
  const ctrl = new Int32Array(workerData.sab, 0, HEADER_BYTES / 4);
  const data = new Uint8Array(workerData.sab, HEADER_BYTES);
  const bytes = new TextEncoder().encode(why.slice(0, 2000));
  const length = Math.min(bytes.length, data.length);
  data.set(bytes.subarray(0, length));
  Atomics.store(ctrl, LENGTH, length);
  Atomics.store(ctrl, FLAG, DEAD);
  Atomics.notify(ctrl, FLAG);
}

try {
  if (!parentPort) throw new Error("sync-bridge-worker.mjs runs in a worker thread");
  register();
  const { serveSyncBridge } = await import("./sync-bridge.ts");
  const handlerModule = await import(workerData.handler);
  if (typeof handlerModule.createBridgeHandler !== "function") throw new Error(`${workerData.handler} exports no createBridgeHandler(data)`);
  const handler = await handlerModule.createBridgeHandler(workerData.handlerData);
  serveSyncBridge(parentPort, workerData.sab, handler);
} catch (e) {
  reportDead(`loading the handler failed: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  process.exit(1);
}
