// One test runner for the whole tree. Three projects, by what a test needs:
// unit (nothing running), integration (real Postgres and Kafka from `npm run services`),
// e2e (the web app and runner, driven in Debian's Chromium).
import { defineConfig } from "vitest/config";

const ignored = ["**/node_modules/**", "**/.next/**", "**/.keyflow/**"];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["packages/**/*.test.ts", "apps/**/*.test.ts", "apps/**/*.test.tsx", "scripts/**/*.test.ts"],
          exclude: [...ignored, "**/*.int.test.ts"],
          testTimeout: 30_000,
          // Heap snapshots check their kept columns against the state (backend.ts): an operator
          // changing a stored object in place without telling the table fails its tests. Property
          // tests generate larger inputs than fast-check's default (see property-size.setup.ts).
          setupFiles: ["packages/operators/src/testing/verify-kept-columns.setup.ts", "packages/operators/src/testing/property-size.setup.ts"],
        },
      },
      {
        test: {
          name: "integration",
          include: ["packages/**/*.int.test.ts", "apps/**/*.int.test.ts"],
          exclude: ignored,
          testTimeout: 180_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["e2e/**/*.e2e.test.ts"],
          exclude: ignored,
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
