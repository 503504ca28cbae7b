// source.file: reads a JSON-lines file in batches and hands each line, as text, to the job (which
// parses it and dead-letters malformed lines). Bounded: ends at the end of the file. The position is
// the byte offset and line number after the last handed-over line, so a restore skips what was read.
import { createReadStream, promises as fs } from "node:fs";
import { z } from "zod";
import type { EmitBatch, RecordSource, SourceRecord } from "../types";
import type { JsonValue } from "@keyflow/operators";

const positionSchema = z.object({ byte: z.number().int().nonnegative(), line: z.number().int().nonnegative() });
type FilePosition = z.infer<typeof positionSchema>;

const NEWLINE = 0x0a;

export interface FileSourceOptions {
  nodeId: string;
  /** Absolute path to read. */
  file: string;
  /** The path as the pipeline wrote it, for dead letters and errors. */
  displayPath: string;
  idleTimeoutMs?: number;
  batchSize?: number;
}

export class FileSource implements RecordSource {
  readonly nodeId: string;
  readonly bounded = true;
  readonly idleTimeoutMs: number | undefined;
  private position: FilePosition = { byte: 0, line: 0 };
  private readonly batchSize: number;

  constructor(private readonly opts: FileSourceOptions) {
    this.nodeId = opts.nodeId;
    this.idleTimeoutMs = opts.idleTimeoutMs;
    this.batchSize = opts.batchSize ?? 1000;
  }

  async open(restored: JsonValue | undefined): Promise<JsonValue> {
    try {
      const stat = await fs.stat(this.opts.file);
      if (!stat.isFile()) throw new Error("not a regular file");
    } catch (err) {
      const why = err instanceof Error && "code" in err && err.code === "ENOENT" ? "no such file" : err instanceof Error ? err.message : String(err);
      throw new Error(`node "${this.nodeId}": cannot read "${this.opts.displayPath}" (${this.opts.file}): ${why}`);
    }
    if (restored !== undefined) {
      const parsed = positionSchema.safeParse(restored);
      if (!parsed.success) throw new Error(`node "${this.nodeId}": the checkpoint's file position is not understood: ${JSON.stringify(restored)}`);
      this.position = parsed.data;
    }
    return { ...this.position };
  }

  async run(emit: EmitBatch, signal: AbortSignal): Promise<void> {
    let { byte, line } = this.position;
    const stream = createReadStream(this.opts.file, { start: byte, highWaterMark: 256 * 1024, signal });
    let carry: Buffer | undefined;
    let batch: SourceRecord[] = [];
    const flush = async () => {
      const records = batch;
      batch = [];
      this.position = { byte, line };
      await emit({ records, position: { byte, line } });
    };
    try {
      for await (const chunk of stream) {
        const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
        const buf = carry ? Buffer.concat([carry, bytes]) : bytes;
        carry = undefined;
        let start = 0;
        for (let nl = buf.indexOf(NEWLINE, start); nl >= 0; nl = buf.indexOf(NEWLINE, start)) {
          this.take(buf, start, nl, ++line, batch);
          byte += nl + 1 - start;
          start = nl + 1;
          if (batch.length >= this.batchSize) {
            await flush();
            if (signal.aborted) return;
          }
        }
        if (start < buf.length) carry = buf.subarray(start);
      }
    } catch (err) {
      if (signal.aborted) return;
      throw new Error(`node "${this.nodeId}": reading "${this.opts.displayPath}" failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    // A last line without a trailing newline.
    if (carry && carry.length > 0) {
      this.take(carry, 0, carry.length, ++line, batch);
      byte += carry.length;
    }
    if (batch.length > 0 || byte !== this.position.byte) await flush();
  }

  /** Adds line `lineNo` (bytes start..end of buf) unless it is blank. */
  private take(buf: Buffer, start: number, end: number, lineNo: number, batch: SourceRecord[]): void {
    let text = buf.toString("utf8", start, end);
    if (lineNo === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return;
    batch.push({ kind: "raw", raw: text, origin: { partition: 0, path: this.opts.displayPath, line: lineNo } });
  }

  async close(): Promise<void> {}
}
