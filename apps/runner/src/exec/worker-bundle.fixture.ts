// A worker for worker-bundle.test.ts: it uses the workspace's engine (bundled) and an npm package
// (left an import), and throws from a named function when asked, for its stack to be read.
import { parentPort } from "node:worker_threads";
import { Packr } from "msgpackr";
import { keyGroupOf } from "@keyflow/operators";

function failOnRequest(): never {
  throw new Error("asked to fail");
}

const packr = new Packr();
parentPort!.on("message", (m: string) => {
  if (m === "fail") failOnRequest();
  parentPort!.postMessage({ keyGroup: keyGroupOf(m, 128), roundTrip: packr.unpack(packr.pack({ key: m })) });
});
