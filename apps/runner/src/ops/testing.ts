// Test helper: reads a job's live metrics stream (GET /jobs/:id/metrics/stream) until a snapshot
// satisfies `check`, for the live-operations tests of the runner service.
import { eventually } from "../../test/run-cli";
import type { LiveSnapshot } from "../service/http";

export async function watchStream<T>(service: { url: string; token: string }, jobId: string, what: string, check: (s: LiveSnapshot) => T | undefined, timeoutMs = 60_000): Promise<T> {
  const res = await fetch(`${service.url}/jobs/${jobId}/metrics/stream`, { headers: { authorization: `Bearer ${service.token}` } });
  const reader = res.body?.getReader();
  if (!reader) throw new Error("no body");
  let text = "";
  let last: LiveSnapshot | undefined;
  try {
    return await eventually(
      async () => {
        const { value, done } = await reader.read();
        if (done) throw new Error("the stream ended");
        text += new TextDecoder().decode(value);
        let end: number;
        while ((end = text.indexOf("\n\n")) >= 0) {
          const data = text.slice(0, end).split("\n").find((l) => l.startsWith("data: "));
          text = text.slice(end + 2);
          if (!data) continue;
          last = JSON.parse(data.slice(6)) as LiveSnapshot;
          const found = check(last);
          if (found !== undefined) return found;
        }
        return undefined;
      },
      what,
      timeoutMs,
      0,
    );
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)} (last snapshot: ${JSON.stringify({ nodes: last?.nodes, sourcePartitions: last?.sourcePartitions })})`);
  } finally {
    await reader.cancel();
  }
}
