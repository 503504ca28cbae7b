// The window operators: tumbling, hopping (sliced) and session windows with incremental aggregates.
export { windowTumblingSpec, windowTumblingParams, type WindowTumblingParams } from "./window.tumbling";
export { windowHoppingSpec, windowHoppingParams, type WindowHoppingParams } from "./window.hopping";
export { windowSessionSpec, windowSessionParams, type WindowSessionParams } from "./window.session";
export { AGGREGATE_OPS, aggregateParams, type AggregateOp, type AggregateParams } from "./aggregate";
export { windowCombineSpec, windowCombineParams, unsaltedKey, type WindowCombineParams } from "./combine";
