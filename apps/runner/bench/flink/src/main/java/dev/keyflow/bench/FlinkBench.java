// The Flink half of Keyflow's end-to-end benchmark: W0 (pass-through) and W1 (per-card velocity,
// eager, with evidence) over the same topic, on a local MiniCluster with hashmap state, so that
// apps/runner/bench/e2e.ts can put events per second of both engines side by side.
package dev.keyflow.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

public final class FlinkBench {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
    String workload = args.getOrDefault("workload", "w0");
    String brokers = args.get("brokers");
    String in = args.get("in");
    String out = args.get("out");
    int parallelism = Integer.parseInt(args.getOrDefault("parallelism", "1"));
    boolean exactlyOnce = "exactly-once".equals(args.getOrDefault("guarantee", "at-least-once"));
    long checkpointMs = Long.parseLong(args.getOrDefault("checkpointMs", "10000"));
    int threshold = Integer.parseInt(args.getOrDefault("threshold", "5"));
    long windowMs = Long.parseLong(args.getOrDefault("windowMs", "60000"));

    Configuration conf = new Configuration();
    conf.setString("state.backend.type", "hashmap");
    // A failure must end the run with its reason, not replay the input into the output again.
    conf.setString("restart-strategy.type", "none");
    // Checkpoints to files, as Keyflow's go to its checkpoint directory (the JobManager's heap holds 5 MB at most).
    conf.setString("execution.checkpointing.storage", "filesystem");
    conf.setString("execution.checkpointing.dir", "file://" + args.getOrDefault("checkpointDir", System.getProperty("java.io.tmpdir") + "/keyflow-flink-bench"));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
    env.enableCheckpointing(checkpointMs);

    KafkaSource<String> source = KafkaSource.<String>builder()
        .setBootstrapServers(brokers)
        .setTopics(in)
        .setGroupId("flink-bench-" + out)
        .setStartingOffsets(OffsetsInitializer.earliest())
        .setBounded(OffsetsInitializer.latest())
        .setValueOnlyDeserializer(new SimpleStringSchema())
        .build();
    // Same work as Keyflow's source: parse the JSON, take its event time, bounded out-of-orderness.
    DataStream<ObjectNode> records = env
        .fromSource(source, WatermarkStrategy.noWatermarks(), "payments")
        .map(s -> (ObjectNode) JSON.readTree(s))
        .returns(ObjectNode.class)
        .assignTimestampsAndWatermarks(WatermarkStrategy.<ObjectNode>forBoundedOutOfOrderness(Duration.ofSeconds(10))
            .withTimestampAssigner((r, prev) -> r.get("ts").asLong()));

    DataStream<String> output = "w1".equals(workload)
        ? records.keyBy(r -> r.get("card").asText()).process(new Velocity(threshold, windowMs)).returns(Types.STRING)
        : records.map(r -> JSON.writeValueAsString(r)).returns(Types.STRING);

    KafkaSink<String> sink = KafkaSink.<String>builder()
        .setBootstrapServers(brokers)
        .setRecordSerializer(KafkaRecordSerializationSchema.builder().setTopic(out).setValueSerializationSchema(new SimpleStringSchema()).build())
        .setDeliveryGuarantee(exactlyOnce ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE)
        .setTransactionalIdPrefix("flink-bench-" + out)
        .setProperty("transaction.timeout.ms", "600000")
        .build();
    output.sinkTo(sink);

    long started = System.nanoTime();
    JobExecutionResult result = env.execute("keyflow-bench-" + workload);
    long wallMs = (System.nanoTime() - started) / 1_000_000;
    // One line the bench parses: the job's own runtime (MiniCluster start excluded) and wall time.
    System.out.println("FLINK_BENCH_RESULT {\"netRuntimeMs\":" + result.getNetRuntime() + ",\"wallMs\":" + wallMs + "}");
  }

  /** velocity, eager: count the key's records in (t - windowMs, t] on arrival; alert with evidence. */
  static final class Velocity extends KeyedProcessFunction<String, ObjectNode, String> {
    private final int threshold;
    private final long windowMs;
    private transient ListState<String> seen; // "ts|id", oldest first

    Velocity(int threshold, long windowMs) {
      this.threshold = threshold;
      this.windowMs = windowMs;
    }

    @Override
    public void open(OpenContext ctx) {
      ListStateDescriptor<String> d = new ListStateDescriptor<>("seen", Types.STRING);
      d.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(2 * windowMs)).build());
      seen = getRuntimeContext().getListState(d);
    }

    @Override
    public void processElement(ObjectNode r, Context ctx, Collector<String> out) throws Exception {
      long t = r.get("ts").asLong();
      long watermark = ctx.timerService().currentWatermark();
      if (t <= watermark) return; // late: Keyflow sends it to its `late` port; nothing is counted
      // As Keyflow's eager velocity: entries at or before watermark − window can never count again;
      // entries with later timestamps (out-of-order arrivals) stay for the records that come next.
      long horizon = watermark - windowMs;
      List<String> kept = new ArrayList<>();
      List<String> inWindow = new ArrayList<>();
      for (String e : seen.get()) {
        long ts = Long.parseLong(e.substring(0, e.indexOf('|')));
        if (ts <= horizon) continue;
        kept.add(e);
        if (ts > t - windowMs && ts <= t) inWindow.add(e);
      }
      String entry = t + "|" + r.get("id").asText();
      kept.add(entry);
      inWindow.add(entry);
      seen.update(kept);
      if (inWindow.size() >= threshold) {
        ObjectNode alert = JSON.createObjectNode();
        alert.put("key", ctx.getCurrentKey());
        alert.put("ts", t);
        alert.put("count", inWindow.size());
        ArrayNode evidence = alert.putArray("evidence");
        for (String e : inWindow) evidence.add(e.substring(e.indexOf('|') + 1));
        alert.set("event", r);
        out.collect(JSON.writeValueAsString(alert));
      }
    }
  }
}
