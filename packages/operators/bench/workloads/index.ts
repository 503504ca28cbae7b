// The benchmark registry: every workload `npm run bench` runs, in table order. Add a workload by
// writing bench/workloads/<name>.ts (see keyedHostWorkload in ../driver) and listing it here.
import type { Workload } from "../driver";
import { patternWorkloads } from "./patterns";
import { windowWorkloads } from "./windows";

export const workloads: Workload[] = [...windowWorkloads, ...patternWorkloads];
