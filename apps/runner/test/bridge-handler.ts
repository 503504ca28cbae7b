// A SyncBridge handler for the bridge's tests (apps/runner/src/sandbox/sync-bridge.test.ts): echo,
// big answers, asynchronous work, and the ways a worker thread can fail.
let count = 0;
let closedWith: unknown;

export function createBridgeHandler(data: { failToLoad?: boolean } | undefined) {
  if (data?.failToLoad) throw new Error("this handler refuses to load");
  return {
    echo: (p: unknown) => p,
    next: () => ++count,
    /** A string of `chars` characters mixing 1-, 2-, 3- and 4-byte UTF-8 sequences. */
    big: ({ chars }: { chars: number }) => {
      const alphabet = ["a", "é", "€", "𝄞"];
      let s = "";
      for (let i = 0; s.length < chars; i++) s += alphabet[i % alphabet.length];
      return s.slice(0, chars);
    },
    length: (p: { text: string }) => p.text.length,
    sleep: ({ ms, value }: { ms: number; value: unknown }) => new Promise((resolve) => setTimeout(() => resolve(value), ms)),
    fail: ({ message }: { message: string }) => Promise.reject(new RangeError(message)),
    crash: () => {
      setTimeout(() => {
        throw new Error("kaboom");
      }, 1);
      return new Promise(() => {});
    },
    exit: ({ code }: { code: number }) => {
      setTimeout(() => process.exit(code), 1);
      return new Promise(() => {});
    },
    hang: () => new Promise(() => {}),
    spin: () => {
      for (;;);
    },
    closedWith: () => closedWith ?? null,
    close: () => {
      closedWith = "closed";
    },
  };
}
