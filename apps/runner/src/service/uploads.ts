// POST /files: a recorded JSON-lines file streamed to the runner (by the web app, for a backtest) and
// kept under `<data dir>/uploads/` with a name the runner chooses. Every line is checked on the way in,
// so a bad file is refused naming its first bad line, and nothing half-written is left behind.
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, type ReadStream, type WriteStream } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import { confinePath, PathOutsideFolderError } from "../io/confine";

/** Folder under the data directory; a stored file's path is relative to the data directory, as a file source reads it. */
export const UPLOAD_FOLDER = "uploads";
export const DEFAULT_MAX_UPLOAD_BYTES = 256 * 1024 * 1024;

/** KEYFLOW_UPLOAD_MAX_BYTES, else the default. */
export function uploadLimit(env: NodeJS.ProcessEnv = process.env): number {
  const parsed = z.coerce.number().int().min(1).safeParse(env.KEYFLOW_UPLOAD_MAX_BYTES);
  if (env.KEYFLOW_UPLOAD_MAX_BYTES === undefined || env.KEYFLOW_UPLOAD_MAX_BYTES === "") return DEFAULT_MAX_UPLOAD_BYTES;
  if (!parsed.success) throw new Error(`KEYFLOW_UPLOAD_MAX_BYTES must be a positive integer (bytes), got "${env.KEYFLOW_UPLOAD_MAX_BYTES}"`);
  return parsed.data;
}

export const storedUploadSchema = z.object({
  /** Relative to the runner's data directory: what a `source.file` path (and a backtest's file range) takes. */
  path: z.string(),
  bytes: z.number().int(),
  records: z.number().int(),
  sha256: z.string(),
});
export type StoredUpload = z.infer<typeof storedUploadSchema>;

export class UploadRefusedError extends Error {
  override name = "UploadRefusedError";
  constructor(
    readonly status: 400 | 413,
    message: string,
  ) {
    super(message);
  }
}

/** Checks each complete line as it arrives: blank lines are skipped (as source.file skips them), any other must be a JSON object. */
class LineChecker {
  private readonly decoder = new StringDecoder("utf8");
  private pending = "";
  line = 0;
  records = 0;

  push(chunk: Buffer): void {
    const text = this.pending + this.decoder.write(chunk);
    const lines = text.split("\n");
    this.pending = lines.pop() ?? "";
    for (const l of lines) this.check(l);
  }

  end(): void {
    const rest = this.pending + this.decoder.end();
    this.pending = "";
    if (rest !== "") this.check(rest);
  }

  private check(raw: string): void {
    this.line++;
    const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (text.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new UploadRefusedError(400, `line ${this.line} is not JSON (${err instanceof Error ? err.message : String(err)}): ${JSON.stringify(text.slice(0, 80))}: a backtest file has one JSON record per line`);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new UploadRefusedError(400, `line ${this.line} is ${Array.isArray(value) ? "an array" : value === null ? "null" : `a ${typeof value}`}, not a JSON object: a backtest file has one record (an object) per line`);
    }
    this.records++;
  }
}

function write(out: WriteStream, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    out.write(chunk, (err) => (err ? reject(err) : resolve()));
  });
}

/** Reads and drops the rest of a body, closing the connection past `budget` bytes. */
function drain(req: IncomingMessage, budget: number): void {
  let left = budget;
  req.on("data", (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) req.destroy();
  });
  req.resume();
}

/**
 * Streams the request body to `<dataDir>/uploads/<generated>.jsonl`, checking its lines and its size
 * as it goes. Refused (UploadRefusedError, the partial file removed): a body over `maxBytes`, a line
 * that is not a JSON object (named by number), a file with no records.
 */
export async function receiveUpload(req: IncomingMessage, dataDir: string, maxBytes: number): Promise<StoredUpload> {
  await mkdir(path.join(dataDir, UPLOAD_FOLDER), { recursive: true });
  // The uploads folder itself must not lead out of the data folder (a symbolic link).
  let folder: string;
  try {
    folder = confinePath(UPLOAD_FOLDER, "the uploads folder", { root: dataDir, folder: "data folder" });
  } catch (err) {
    if (err instanceof PathOutsideFolderError) throw new UploadRefusedError(400, err.message);
    throw err;
  }
  // The name is the runner's: a timestamp for ordering, random bytes so nobody can guess or choose it.
  const name = `${Date.now().toString(36)}-${randomBytes(12).toString("hex")}.jsonl`;
  const partial = path.join(folder, `${name}.part`);
  const out = createWriteStream(partial, { flags: "wx" });
  const hash = createHash("sha256");
  const lines = new LineChecker();
  let bytes = 0;
  try {
    for await (const chunk of req) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      bytes += buf.length;
      if (bytes > maxBytes) throw new UploadRefusedError(413, `the file is larger than the runner's upload limit of ${maxBytes} bytes (KEYFLOW_UPLOAD_MAX_BYTES)`);
      lines.push(buf);
      hash.update(buf);
      await write(out, buf);
    }
    lines.end();
    if (lines.records === 0) throw new UploadRefusedError(400, bytes === 0 ? "the file is empty: a backtest file has one JSON record per line" : `the file has ${lines.line} blank line(s) and no records`);
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    await rename(partial, path.join(folder, name));
  } catch (err) {
    // The stream opens its file asynchronously: removed before the stream has closed, a body refused at
    // its first chunk could see the file created after the removal, and a `.part` stayed behind.
    out.destroy();
    if (!out.closed) await new Promise<void>((resolve) => out.once("close", () => resolve()));
    await rm(partial, { force: true });
    // The rest of a refused body is read and thrown away (bounded by the limit), so the client gets the answer.
    if (err instanceof UploadRefusedError && err.status === 400) drain(req, maxBytes - bytes);
    throw err;
  }
  return { path: `${UPLOAD_FOLDER}/${name}`, bytes, records: lines.records, sha256: hash.digest("hex") };
}

/** The names receiveUpload gives: the only files GET /files/uploads/<name> reads back (no path, no other folder). */
export const UPLOAD_NAME = /^[0-9a-z]+-[0-9a-f]{24}\.jsonl$/;

/**
 * A stored upload, read back (the web app's comparison reads a file backtest's records for its labels
 * and scope). Only a name of the runner's own making under the uploads folder; anything else is null.
 */
export async function openUpload(dataDir: string, name: string): Promise<{ bytes: number; stream: ReadStream } | null> {
  if (!UPLOAD_NAME.test(name)) return null;
  let file: string;
  try {
    file = confinePath(`${UPLOAD_FOLDER}/${name}`, "the upload", { root: dataDir, folder: "data folder" });
  } catch (err) {
    if (err instanceof PathOutsideFolderError) return null;
    throw err;
  }
  const info = await stat(file).catch(() => null);
  if (info === null || !info.isFile()) return null;
  return { bytes: info.size, stream: createReadStream(file) };
}
