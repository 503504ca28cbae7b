// @keyflow/runner's programmatic surface: start the service, or drive a job, from other code and tests.
export { readEnv, type RunnerEnv } from "./env";
export { createLogger, silentLogger, type Logger } from "./log";
export { createJobDriver, type CreateJobOptions } from "./job/create";
export { JobDriver, type JobSummary, type JobStatus, type Connectors } from "./job/driver";
export { formatSummary } from "./job/summary";
export { loadPipelineFile, checkPipeline, type LoadedPipeline } from "./pipeline/load";
export { createRunnerService, startRunnerService, type RunnerService } from "./service/main";
export type { RecordSource, RecordSink, DeadLetterSink, SourceBatch, SourceRecord, SinkRecord, DeadLetter } from "./io/types";
export { DLQ_HEADERS } from "./io/kafka/dead-letters";
export { keyStateResponseSchema, type KeyStateResponse } from "./job/queryable-state";
