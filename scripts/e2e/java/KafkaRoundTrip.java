import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client of the kafka-iggy e2e suite (scripts/e2e/java_test.go).
 *
 * <p>Usage: {@code java KafkaRoundTrip BOOTSTRAP PARTITIONS < jobs.json}
 *
 * <p>Reads {@code {"jobs":[{"topic","codec","records":[...]}]}} from stdin. For each job, in one
 * JVM: produces every record with a KafkaProducer (compression.type = codec, idempotent,
 * acks=all) to the partition it names, then reads the topic from the beginning of each of
 * PARTITIONS partitions with a KafkaConsumer (assign, no group) until it has as many records as
 * it produced. Prints {@code {"results":[{"topic","codec","produced":[...],"consumed":[...],
 * "error"}]}} on stdout, one result per job; "error" is set when that job failed. A record is
 * {@code {"partition","offset","timestamp","key","value","headers":[{"key","value"}]}}; bytes
 * are base64, JSON null is a Kafka null. Exits 1 with a message on stderr when the input cannot
 * be read.
 */
public final class KafkaRoundTrip {
  private static final Base64.Encoder B64 = Base64.getEncoder();
  private static final Base64.Decoder UNB64 = Base64.getDecoder();

  public static void main(String[] args) {
    if (args.length != 2) {
      System.err.println("usage: KafkaRoundTrip BOOTSTRAP PARTITIONS < jobs.json");
      System.exit(2);
    }
    String bootstrap = args[0];
    int partitions = Integer.parseInt(args[1]);
    JsonObject in;
    try {
      in =
          new Gson()
              .fromJson(
                  new InputStreamReader(System.in, StandardCharsets.UTF_8), JsonObject.class);
    } catch (Exception e) {
      System.err.println("KafkaRoundTrip: cannot read the jobs from stdin: " + e);
      System.exit(1);
      return;
    }
    JsonArray results = new JsonArray();
    for (JsonElement je : in.getAsJsonArray("jobs")) {
      JsonObject job = je.getAsJsonObject();
      String topic = job.get("topic").getAsString();
      String codec = job.get("codec").getAsString();
      JsonArray records = job.getAsJsonArray("records");
      JsonObject result = new JsonObject();
      result.addProperty("topic", topic);
      result.addProperty("codec", codec);
      try {
        long t0 = System.nanoTime();
        result.add("produced", produce(bootstrap, topic, codec, records));
        long t1 = System.nanoTime();
        result.add("consumed", consume(bootstrap, topic, partitions, records.size()));
        long t2 = System.nanoTime();
        System.err.printf(
            "KafkaRoundTrip: %s (%s): produced in %d ms, consumed in %d ms%n",
            topic, codec, (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000);
      } catch (Exception e) {
        System.err.println("KafkaRoundTrip: " + topic + " (" + codec + "): " + e);
        e.printStackTrace(System.err);
        result.addProperty("error", e.toString());
      }
      results.add(result);
    }
    JsonObject out = new JsonObject();
    out.add("results", results);
    PrintStream stdout = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    stdout.println(out);
  }

  private static JsonArray produce(String bootstrap, String topic, String codec, JsonArray records)
      throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.CLIENT_ID_CONFIG, "kafka-iggy-e2e-java");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
    p.put(ProducerConfig.ENABLE_METRICS_PUSH_CONFIG, "false");
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      for (JsonElement e : records) {
        JsonObject r = e.getAsJsonObject();
        List<Header> headers = new ArrayList<>();
        for (JsonElement he : r.getAsJsonArray("headers")) {
          JsonObject h = he.getAsJsonObject();
          headers.add(new RecordHeader(h.get("key").getAsString(), bytes(h.get("value"))));
        }
        ProducerRecord<byte[], byte[]> pr =
            new ProducerRecord<>(
                topic,
                r.get("partition").getAsInt(),
                r.get("timestamp").getAsLong(),
                bytes(r.get("key")),
                bytes(r.get("value")),
                headers);
        sent.add(producer.send(pr));
      }
      producer.flush();
      JsonArray out = new JsonArray();
      for (Future<RecordMetadata> f : sent) {
        RecordMetadata md = f.get(20, TimeUnit.SECONDS);
        JsonObject o = new JsonObject();
        o.addProperty("partition", md.partition());
        o.addProperty("offset", md.hasOffset() ? md.offset() : -1);
        o.addProperty("timestamp", md.hasTimestamp() ? md.timestamp() : -1);
        out.add(o);
      }
      return out;
    }
  }

  private static JsonArray consume(String bootstrap, String topic, int partitions, int want) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kafka-iggy-e2e-java");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
    p.put(ConsumerConfig.ENABLE_METRICS_PUSH_CONFIG, "false");
    JsonArray out = new JsonArray();
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int i = 0; i < partitions; i++) {
        tps.add(new TopicPartition(topic, i));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (out.size() < want) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "consumed " + out.size() + " of " + want + " records before the deadline");
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          JsonObject o = new JsonObject();
          o.addProperty("partition", r.partition());
          o.addProperty("offset", r.offset());
          o.addProperty("timestamp", r.timestamp());
          o.addProperty("timestampType", r.timestampType().name);
          o.add("key", b64(r.key()));
          o.add("value", b64(r.value()));
          JsonArray hs = new JsonArray();
          for (Header h : r.headers()) {
            JsonObject ho = new JsonObject();
            ho.addProperty("key", h.key());
            ho.add("value", b64(h.value()));
            hs.add(ho);
          }
          o.add("headers", hs);
          out.add(o);
        }
      }
    }
    return out;
  }

  private static byte[] bytes(JsonElement e) {
    return e == null || e.isJsonNull() ? null : UNB64.decode(e.getAsString());
  }

  private static JsonElement b64(byte[] b) {
    return b == null ? JsonNull.INSTANCE : new JsonPrimitive(B64.encodeToString(b));
  }
}
