// Recorded files for backtests: the JSON-lines file a person picks in the backtest panel is streamed
// through the web server to the runner (POST /files), which checks every line and stores it under its
// data directory with a name of its own; the answer's path is what a file range then names. Audited.
import { z } from "zod";
import { appendAuditEvent, type PrismaClient } from "@keyflow/db";
import type { SessionUser } from "../auth/roles";
import { withRunnerAuth } from "../runner-client";

// The upload cap lives with the other body caps (the web server's front reads it too).
export { backtestFileLimit, DEFAULT_BACKTEST_FILE_MAX_BYTES } from "../http/body-limit";

/** The runner's answer to POST /files. */
export const storedFileSchema = z.object({ path: z.string().regex(/^uploads\/[A-Za-z0-9._-]+$/, "the runner stores uploads under uploads/"), bytes: z.number().int(), records: z.number().int(), sha256: z.string() });
export type StoredBacktestFile = z.infer<typeof storedFileSchema> & { name: string };

/** A refusal with the HTTP status to answer: the file's own fault (400, 413) or the runner's (502). */
export class BacktestFileError extends Error {
  override name = "BacktestFileError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The picked file's name, for people and the audit trail only (never a path on the runner). */
export function displayName(header: string | null): string {
  let name = header ?? "";
  try {
    name = decodeURIComponent(name);
  } catch {
    // A malformed escape: shown as sent.
  }
  name = name.replace(/[\u0000-\u001f\u007f]/g, "").trim();
  return name === "" ? "unnamed.jsonl" : name.slice(0, 200);
}

function tooLarge(maxBytes: number): BacktestFileError {
  return new BacktestFileError(413, `the file is larger than the upload limit of ${maxBytes} bytes (KEYFLOW_UPLOAD_MAX_BYTES)`);
}

/**
 * Streams `body` to the runner and records the upload in the audit trail. Refused: a declared or
 * actual size over `maxBytes`, an empty body, and whatever the runner refuses (a line that is not a
 * JSON object, named by number), with its message.
 */
export async function uploadBacktestFile(
  prisma: PrismaClient,
  runnerUrl: string,
  user: SessionUser,
  input: { body: ReadableStream<Uint8Array> | null; name: string; declaredBytes: number | null; maxBytes: number },
): Promise<StoredBacktestFile> {
  if (input.declaredBytes !== null && input.declaredBytes > input.maxBytes) throw tooLarge(input.maxBytes);
  if (input.body === null || input.declaredBytes === 0) throw new BacktestFileError(400, `${input.name}: the file is empty: a backtest file has one JSON record per line`);
  let sent = 0;
  // Counted on the way through: a body longer than it said (or that said nothing) stops at the limit.
  const counted = input.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        sent += chunk.byteLength;
        if (sent > input.maxBytes) controller.error(tooLarge(input.maxBytes));
        else controller.enqueue(chunk);
      },
    }),
  );
  const init = withRunnerAuth({ method: "POST", headers: { "content-type": "application/x-ndjson" }, body: counted });
  let response: Response;
  try {
    // A streamed request body needs `duplex: "half"` (fetch in Node.js); not in every RequestInit typing.
    response = await fetch(`${runnerUrl}/files`, Object.assign(init, { duplex: "half" as const }));
  } catch (error) {
    if (sent > input.maxBytes) throw tooLarge(input.maxBytes);
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new BacktestFileError(502, `the runner at ${runnerUrl} did not take the file (${reason})`);
  }
  const text = await response.text();
  if (!response.ok) {
    let message = text.trim();
    try {
      message = z.object({ error: z.string() }).parse(JSON.parse(text)).error;
    } catch {
      // Not the runner's error shape: its text as it is.
    }
    throw new BacktestFileError(response.status === 400 || response.status === 413 ? response.status : 502, `${input.name}: ${message}`);
  }
  const stored = storedFileSchema.parse(JSON.parse(text));
  await appendAuditEvent(prisma, { actor: user.email, action: "upload", subjectType: "backtest_file", subjectId: stored.path, details: { name: input.name, bytes: stored.bytes, records: stored.records, sha256: stored.sha256 } });
  return { ...stored, name: input.name };
}

/** An uploaded file's records, read back from the runner (GET /files/uploads/<name>): a file backtest's input for its comparison. */
export async function readBacktestFile(runnerUrl: string, storedPath: string): Promise<string> {
  const name = storedPath.startsWith("uploads/") ? storedPath.slice("uploads/".length) : "";
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new BacktestFileError(400, `${storedPath}: not an upload of the runner's`);
  let response: Response;
  try {
    response = await fetch(`${runnerUrl}/files/uploads/${encodeURIComponent(name)}`, withRunnerAuth({ method: "GET" }));
  } catch (error) {
    throw new BacktestFileError(502, `the runner at ${runnerUrl} did not answer for ${storedPath} (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!response.ok) throw new BacktestFileError(response.status === 404 ? 404 : 502, `${storedPath}: the runner answered ${response.status} (${(await response.text()).trim().slice(0, 200)})`);
  return response.text();
}
