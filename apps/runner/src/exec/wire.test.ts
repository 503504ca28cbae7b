// Channel items across a real MessagePort: what a keyed subtask receives is what was sent, barrier
// options included (without them a subtask would write its whole state where only changes are due).
import { MessageChannel } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import type { ChannelItem } from "./channel";
import { postItem, toItem, type Payload, type WireMessage } from "./wire";

async function across(item: ChannelItem<Payload>): Promise<ChannelItem<Payload>> {
  const { port1, port2 } = new MessageChannel();
  try {
    const received = new Promise<WireMessage>((resolve) => port2.once("message", resolve));
    postItem(port1, item);
    return toItem(await received);
  } finally {
    port1.close();
    port2.close();
  }
}

describe("postItem / toItem", () => {
  it("carries barriers with and without options, data and the end of input", async () => {
    expect(await across({ kind: "barrier", id: 4, options: { changelog: "changes" } })).toEqual({ kind: "barrier", id: 4, options: { changelog: "changes" } });
    expect(await across({ kind: "barrier", id: 5, options: { changelog: "whole" } })).toEqual({ kind: "barrier", id: 5, options: { changelog: "whole" } });
    expect(await across({ kind: "barrier", id: 6 })).toEqual({ kind: "barrier", id: 6 });
    expect(await across({ kind: "data", payload: [1, 2, "x"], records: 1 })).toEqual({ kind: "data", payload: [1, 2, "x"], records: 1 });
    expect(await across({ kind: "end" })).toEqual({ kind: "end" });
  });
});
