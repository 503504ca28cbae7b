// A sink record that crossed threads as its JSON text (SerializedSinkRecord): sinks write the text as
// is, readers of `value` get the object, and serialized whole it reads as the plain record.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../log";
import { FileSink } from "./file/sink";
import { SerializedSinkRecord } from "./types";

describe("SerializedSinkRecord", () => {
  it("parses its value only when read, and serializes whole as the plain record", () => {
    const r = new SerializedSinkRecord('{"txId":"t1","evidence":{"total":2}}', 1767225600123, "card-1");
    expect(r.value).toEqual({ txId: "t1", evidence: { total: 2 } });
    expect(r.value).toBe(r.value);
    expect(JSON.parse(JSON.stringify(r))).toEqual({ value: { txId: "t1", evidence: { total: 2 } }, timestamp: 1767225600123, key: "card-1" });
    expect(JSON.parse(JSON.stringify(new SerializedSinkRecord("{}", 5)))).toEqual({ value: {}, timestamp: 5 });
  });

  it("is written by sink.file as its text, beside plain records, at the checkpoint's commit", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-serialized-"));
    const file = path.join(dir, "alerts.jsonl");
    const sink = new FileSink("alerts", file, "alerts.jsonl", createLogger("warn"));
    await sink.open(undefined);
    // The text is written as it came, not re-serialized from a parsed value.
    await sink.write([new SerializedSinkRecord('{"b": 1, "a": 2}', 1), { value: { c: 3 }, timestamp: 2 }]);
    await sink.commit(1, await sink.prepareCommit(1));
    await sink.close();
    expect(readFileSync(file, "utf8")).toBe('{"b": 1, "a": 2}\n{"c":3}\n');
  });
});
