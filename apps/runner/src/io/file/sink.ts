// sink.file and the dead-letter file: JSON lines written through a CommittedFile, so the file
// changes only at checkpoints ("sink.file commits its files at checkpoints").
import type { JsonValue } from "@keyflow/operators";
import type { Logger } from "../../log";
import type { CommittingWriter, DeadLetter, RecordSink, SinkRecord } from "../types";
import { CommittedFile } from "./committed-file";
import { deadLetterJson } from "../dead-letter-format";

class JsonLinesWriter<T> implements CommittingWriter<T> {
  protected readonly file: CommittedFile;

  constructor(
    file: string,
    readonly target: string,
    private readonly toLine: (record: T) => string,
    log: Logger,
  ) {
    this.file = new CommittedFile(file, log);
  }

  open(restored: JsonValue | undefined): Promise<void> {
    return this.file.open(restored);
  }

  async write(records: readonly T[]): Promise<void> {
    if (records.length === 0) return;
    let text = "";
    for (const r of records) text += this.toLine(r) + "\n";
    await this.file.append(text);
  }

  async prepareCommit(checkpointId: number): Promise<JsonValue> {
    return { ...(await this.file.prepareCommit(checkpointId)) };
  }

  commit(_checkpointId: number, prepared: JsonValue): Promise<void> {
    return this.file.commit(prepared);
  }

  close(): Promise<void> {
    return this.file.close();
  }
}

export class FileSink extends JsonLinesWriter<SinkRecord> implements RecordSink {
  constructor(
    readonly nodeId: string,
    file: string,
    displayPath: string,
    log: Logger,
  ) {
    super(file, displayPath, (r) => r.json ?? JSON.stringify(r.value), log);
  }
}

/** `<pipeline-name>.dlq.jsonl`: one JSON object per dead letter (see ../dead-letter-format). */
export class FileDeadLetterSink extends JsonLinesWriter<DeadLetter> {
  constructor(file: string, displayPath: string, log: Logger) {
    super(file, displayPath, (d) => JSON.stringify(deadLetterJson(d)), log);
  }
}
