// `@keyflow/operators/testing`: what operator authors test with.
export { OperatorTestHarness, type HarnessOptions, type HarnessOutput } from "./harness";
export { canonicalJobSnapshot, packedChunks } from "./canonical-snapshot";
export { validPipeline } from "./valid-pipeline";
