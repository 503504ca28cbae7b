// The files of the disk backend's checkpoints: a full dump or a delta (changed and deleted keys) of
// one task's store. A file is a sequence of frames, each a 4-byte little-endian length and a
// MessagePack array: the first frame is the header, the others hold up to FRAME_ENTRIES entries, so
// neither writing nor reading ever holds a whole file in memory. Entries are in store key order.
import { closeSync, fsyncSync, openSync, readSync, writeSync } from "node:fs";
import { Packr, Unpackr } from "msgpackr";
import { z } from "zod";

export const CHAIN_FILE_FORMAT = "keyflow.disk-state/v1";
const FRAME_ENTRIES = 4096;

/** One checkpoint file of a task's disk state, as a checkpoint's metadata lists it. */
export const chainFileSchema = z.object({
  /** Relative to the checkpoint's folder (`../shared/…` for checkpoints, a file inside a savepoint). */
  file: z.string(),
  kind: z.enum(["full", "delta"]),
  /** The checkpoint that wrote it. */
  checkpoint: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  entries: z.number().int().nonnegative(),
});
export type ChainFile = z.infer<typeof chainFileSchema>;

/** A task's disk state at a checkpoint: a full file and the deltas over it, oldest first. */
export const diskChainSchema = z.object({ files: z.array(chainFileSchema).min(1) });
export type DiskChain = z.infer<typeof diskChainSchema>;

const headerSchema = z.object({
  format: z.literal(CHAIN_FILE_FORMAT),
  kind: z.enum(["full", "delta"]),
  /** Kinds of the tables, by store prefix (`node\0table`): counting a map table's entries needs it. */
  tables: z.record(z.string(), z.enum(["value", "list", "map"])),
});
export type ChainHeader = z.infer<typeof headerSchema>;

const packr = new Packr({ useRecords: false, variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

/** An entry: the store key and the stored bytes, or null for a deleted key (deltas only). */
export type ChainEntry = [string, Uint8Array | null];

/** Writes a chain file synchronously (the engine thread waits for it, as for a heap snapshot) and fsyncs it. */
export class ChainFileWriter {
  private readonly fd: number;
  private frame: Array<string | Uint8Array | null> = [];
  bytes = 0;
  entries = 0;

  constructor(
    readonly path: string,
    header: ChainHeader,
  ) {
    this.fd = openSync(path, "w");
    this.writeFrame(header);
  }

  add(key: string, value: Uint8Array | null): void {
    this.frame.push(key, value);
    this.entries++;
    if (this.frame.length >= FRAME_ENTRIES * 2) this.flushFrame();
  }

  /** Flushes, fsyncs and closes; returns the file's size. */
  close(): number {
    this.flushFrame();
    fsyncSync(this.fd);
    closeSync(this.fd);
    return this.bytes;
  }

  /** Closes without syncing (a failed write; the caller removes the file). */
  abandon(): void {
    closeSync(this.fd);
  }

  private flushFrame(): void {
    if (this.frame.length === 0) return;
    this.writeFrame(this.frame);
    this.frame = [];
  }

  private writeFrame(value: unknown): void {
    const body = packr.pack(value);
    const len = Buffer.allocUnsafe(4);
    len.writeUInt32LE(body.byteLength, 0);
    writeSync(this.fd, len);
    writeSync(this.fd, body);
    this.bytes += 4 + body.byteLength;
  }
}

/** Reads a chain file frame by frame: the header, then `onEntries` for each frame of entries. */
export function readChainFile(file: string, onEntries: (entries: ChainEntry[]) => void): ChainHeader {
  const fd = openSync(file, "r");
  try {
    const lenBuf = Buffer.alloc(4);
    const readFrame = (): unknown => {
      const n = readSync(fd, lenBuf, 0, 4, null);
      if (n === 0) return undefined;
      if (n !== 4) throw new Error(`disk state file "${file}" is truncated (a frame length of ${n} bytes)`);
      const len = lenBuf.readUInt32LE(0);
      const body = Buffer.allocUnsafe(len);
      let got = 0;
      while (got < len) {
        const r = readSync(fd, body, got, len - got, null);
        if (r === 0) throw new Error(`disk state file "${file}" is truncated (a frame of ${len} bytes has ${got})`);
        got += r;
      }
      return unpackr.unpack(body);
    };
    const parsed = headerSchema.safeParse(readFrame());
    if (!parsed.success) throw new Error(`"${file}" is not a disk state file (${CHAIN_FILE_FORMAT}): ${parsed.error.issues[0]?.message ?? "bad header"}`);
    for (let frame = readFrame(); frame !== undefined; frame = readFrame()) {
      if (!Array.isArray(frame) || frame.length % 2 !== 0) throw new Error(`disk state file "${file}" has a malformed frame`);
      const entries: ChainEntry[] = [];
      for (let i = 0; i < frame.length; i += 2) {
        const k: unknown = frame[i];
        const v: unknown = frame[i + 1];
        if (typeof k !== "string" || !(v === null || v instanceof Uint8Array)) throw new Error(`disk state file "${file}" has a malformed entry`);
        entries.push([k, v]);
      }
      onEntries(entries);
    }
    return parsed.data;
  } finally {
    closeSync(fd);
  }
}
