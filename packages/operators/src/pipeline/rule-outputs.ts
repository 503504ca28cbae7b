// Names a rule's outputs carry between the runner (which writes them) and the web app (which reads
// them back for comparisons): one definition, so the two can never drift apart.

/** A shadow version's alert topic: `<rule>.shadow`, or `<rule>.shadow.<node>` when the version has several Kafka sinks. */
export function shadowTopic(rule: string, nodeId: string, kafkaSinks: number): string {
  return kafkaSinks === 1 ? `${rule}.shadow` : `${rule}.shadow.${nodeId}`;
}

/** The Kafka header on every alert of a rule job: the version that raised it (shadow versions share a topic). */
export const RULE_VERSION_HEADER = "keyflow-rule-version";
/** The same, as a field of the alert's JSON. */
export const RULE_VERSION_FIELD = "ruleVersion";
