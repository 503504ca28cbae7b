// Names a rule's outputs carry between the runner (which writes them) and the web app (which reads
// them back for comparisons): one definition, so the two can never drift apart.

/** A shadow version's alert topic: `<rule>.shadow`, or `<rule>.shadow.<node>` when the version has several Kafka sinks. */
export function shadowTopic(rule: string, nodeId: string, kafkaSinks: number): string {
  return kafkaSinks === 1 ? `${rule}.shadow` : `${rule}.shadow.${nodeId}`;
}

/** A shadow version's file: one per version and node beside the sink's own (files cannot be shared by two writers). */
export function shadowFilePath(rule: string, version: number, nodeId: string, path: string): string {
  const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : "";
  return `${dir}${rule}.shadow.v${version}.${nodeId}.jsonl`;
}

/** The Kafka header on every alert of a rule job: the version that raised it (shadow versions share a topic). */
export const RULE_VERSION_HEADER = "keyflow-rule-version";
/** The same, as a field of the alert's JSON. */
export const RULE_VERSION_FIELD = "ruleVersion";
