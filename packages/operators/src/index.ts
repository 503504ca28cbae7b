// @keyflow/operators: the engine core and the operator catalog. Pure and deterministic: no I/O,
// no clock, no randomness. The harness for operator tests is `@keyflow/operators/testing`.

// ---- The operator contract ----
export * from "./core/api";
export * from "./core/spec";

// ---- The engine: keys and key groups, keyed state, timers, the operator host, the local job ----
export * from "./core/keys";
export { OperatorHost, type HostEmit, type HostMetrics, type OperatorHostOptions, type StateStats } from "./core/host";
export { HeapKeyedStateBackend, SnapshotHold, type ChangelogSnapshot, estimateBytes, keptColumnsVerification, setKeptColumnsVerification, type KeyedStateBackend, type StateBackendStats, type StateKind, type StateTable, type TableSnapshot } from "./core/state";
export { encodeSnapshot, joinPieces, PROTO_FIELD_REFUSAL, type SnapshotPieces } from "./core/snapshot-codec";
export { TimerQueue, type TimerTuple } from "./core/timers";
export { PartitionWatermarks, type PartitionWatermarkTuple } from "./core/watermarks";
export { LocalJob, type ExchangeOutput, type JobEmission, type JobEndpoint, type LocalJobOptions, type NodeMetrics, type SourceOrigin } from "./runtime/job";
export { mergeJobSnapshots, mergeOperatorSnapshots, type SnapshotPart } from "./runtime/rescale";
export { resolveChangelog } from "./runtime/changelog";
export { queryKeyState, type KeyStateEntry, type KeyStateView, type KeyTimer } from "./runtime/queryable";
export { compileGraph, PipelineInvalidError, type GraphNode, type JobGraph, type PipelineIssue, type Route } from "./runtime/graph";
export { eventTimeOf, parseIsoTimestamp } from "./runtime/timestamps";

// ---- The catalog ----
export { catalog, getOperatorSpec, indexCatalog, isOperatorType, operatorTypes, paletteGroups, paletteSections, type OperatorType, type PaletteSection } from "./catalog";

// ---- Pipelines: the document, durations, the validator ----
export * from "./pipeline/document";
export * from "./pipeline/durations";
export * from "./pipeline/json-location";
export * from "./pipeline/rule-outputs";
export * from "./pipeline/outputs";
export {
  canConnect,
  formatIssue,
  resolvePortKinds,
  validatePipeline,
  type ConnectResult,
  type GraphLike,
  type Issue,
  type IssueSeverity,
  type PortKinds,
  type ValidateOptions,
  type ValidationResult,
} from "./pipeline/validate";

// ---- Budgets on user code and expressions (defaults in one place) ----
export * from "./limits";

// ---- Expressions (CEL) ----
export * from "./expr/index";

// ---- Operators whose helpers other packages use ----
export { DEMO_PAYMENT_FIELDS, DEMO_TIMESTAMP_FIELD, generateDemoPayment, type DemoPayment, type SourceDemoParams } from "./operators/source.demo/source.demo";
export { DEFAULT_MAX_OUT_OF_ORDERNESS_MS } from "./operators/event-time";
export type { SourceKafkaParams } from "./operators/source.kafka/source.kafka";
export type { SourceFileParams } from "./operators/source.file/source.file";
export type { SinkKafkaParams } from "./operators/sink.kafka/sink.kafka";
export type { SinkFileParams } from "./operators/sink.file/sink.file";
export { SALT_SEPARATOR, selectKey, type KeyByParams } from "./operators/keyBy/keyBy";
export { errorRecord, type ErrorRecord } from "./operators/side-outputs";
export * from "./operators/windows";

// ---- Fraud patterns, enrichment and custom process functions ----
export { velocitySpec, type VelocityParams } from "./operators/velocity/velocity";
export { dedupSpec, type DedupParams } from "./operators/dedup/dedup";
export { thresholdSpec, type ThresholdParams } from "./operators/threshold/threshold";
export { timeoutSpec, type TimeoutParams } from "./operators/timeout/timeout";
export { sessionizeSpec, type SessionizeParams } from "./operators/sessionize/sessionize";
export { topKSpec, type TopKParams } from "./operators/topK/topK";
export { dailyTotalSpec, type DailyTotalParams } from "./operators/dailyTotal/dailyTotal";
export { structuringSpec, type StructuringParams } from "./operators/structuring/structuring";
export { pendingWatchdogSpec, type PendingWatchdogParams } from "./operators/pendingWatchdog/pendingWatchdog";
export { enrichBroadcastSpec, type EnrichBroadcastParams } from "./operators/enrich-broadcast/enrich-broadcast";
export { enrichTemporalSpec, type EnrichTemporalParams } from "./operators/enrich-temporal/enrich-temporal";
export {
  createCustomOperator,
  NO_SANDBOX_MESSAGE,
  processCustomSpec,
  processCustomTemplate,
  processCustomTypeDefinitions,
  type CustomContext,
  type CustomFunctionFactory,
  type CustomProcessFunction,
  type CustomRecord,
  type CustomSidePort,
  type CustomState,
  type CustomStateOptions,
  type CustomTimer,
  type CustomTimers,
  type ProcessCustomParams,
} from "./operators/process-custom/process-custom";
export { businessDayOf, type BusinessDay } from "./operators/shared/business-day";
export { EVIDENCE_CAP, type Evidence, type EvidenceRef } from "./operators/shared/evidence";
