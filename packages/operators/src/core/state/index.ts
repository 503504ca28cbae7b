// Keyed state: the backend interface, the heap backend, and the key-scoped handles with TTL.
export * from "./backend";
export * from "./handles";
export { estimateBytes } from "./size";
export { KeyStateBudget, StateBudgetExceededError } from "./budget";
export * from "./slots";
export { stateBuffer, stateFloat64Array } from "./state-memory";
