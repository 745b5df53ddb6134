import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's scenarios of the compatibility run (scripts/e2e/scenarios_*_test.go).
 *
 * <p>Usage: {@code java KafkaScenarios SCENARIO BOOTSTRAP < params.json}, SCENARIO one of group,
 * commit, seek, idempotent, admin. Params: {@code {"topic","group","partitions","records",
 * "timestamp"}}. Prints JSON lines on stdout: for group, an {@code {"event":"rebalanced",...}}
 * line once both members hold a share of the partitions, after which it waits for a line on
 * stdin (the Go side describes the group meanwhile); last, {@code {"result":{...}}} or {@code
 * {"error":"..."}}. The Go test checks the values; this program only observes. It runs against
 * the kafka-clients version on its classpath (3.9.x or 4.x).
 */
public final class KafkaScenarios {
  private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);
  private static final long DEADLINE_MS = 45_000;

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: KafkaScenarios SCENARIO BOOTSTRAP < params.json");
      System.exit(2);
    }
    BufferedReader stdin =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    JsonObject params = new Gson().fromJson(stdin.readLine(), JsonObject.class);
    String bootstrap = args[1];
    JsonObject result;
    try {
      switch (args[0]) {
        case "group":
          result = group(bootstrap, params, stdin);
          break;
        case "commit":
          result = commit(bootstrap, params);
          break;
        case "seek":
          result = seek(bootstrap, params);
          break;
        case "idempotent":
          result = idempotent(bootstrap, params);
          break;
        case "admin":
          result = admin(bootstrap, params);
          break;
        default:
          throw new IllegalArgumentException("unknown scenario " + args[0]);
      }
    } catch (Exception e) {
      e.printStackTrace(System.err);
      JsonObject err = new JsonObject();
      err.addProperty("error", e.toString());
      OUT.println(err);
      System.exit(0);
      return;
    }
    JsonObject out = new JsonObject();
    out.add("result", result);
    OUT.println(out);
    System.exit(0); // do not wait for non-daemon client threads
  }

  private static Properties consumerProps(String bootstrap, String group, String clientId) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
    if (group != null) {
      p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    }
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
    return p;
  }

  private static KafkaConsumer<byte[], byte[]> consumer(Properties p) {
    return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  private static long deadline() {
    return System.currentTimeMillis() + DEADLINE_MS;
  }

  private static void check(long deadline, String what) {
    if (System.currentTimeMillis() > deadline) {
      throw new IllegalStateException("timed out after " + DEADLINE_MS + " ms: " + what);
    }
  }

  private static JsonArray ints(Collection<Integer> xs) {
    JsonArray a = new JsonArray();
    for (int x : new TreeSet<>(xs)) {
      a.add(x);
    }
    return a;
  }

  /** One group member polling in its own thread and tracking its assignment. */
  private static final class Member implements Runnable, ConsumerRebalanceListener {
    final KafkaConsumer<byte[], byte[]> consumer;
    final String topic;
    final Set<Integer> assigned = ConcurrentHashMap.newKeySet();
    final AtomicBoolean stop = new AtomicBoolean();
    volatile int consumed;
    volatile String memberId = "";
    volatile Throwable failure;
    final Thread thread = new Thread(this);

    Member(String bootstrap, String topic, String group, String clientId) {
      this.consumer = consumer(consumerProps(bootstrap, group, clientId));
      this.topic = topic;
    }

    @Override
    public void run() {
      try {
        consumer.subscribe(Collections.singletonList(topic), this);
        while (!stop.get()) {
          for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
            consumed++;
          }
          memberId = consumer.groupMetadata().memberId();
        }
      } catch (Throwable t) {
        failure = t;
      } finally {
        consumer.close(Duration.ofSeconds(10));
      }
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> ps) {
      for (TopicPartition tp : ps) {
        assigned.remove(tp.partition());
      }
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> ps) {
      for (TopicPartition tp : ps) {
        assigned.add(tp.partition());
      }
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> ps) {
      onPartitionsRevoked(ps);
    }

    void failed() {
      if (failure != null) {
        throw new IllegalStateException("group member failed: " + failure, failure);
      }
    }
  }

  /**
   * Member A joins alone and gets every partition; member B joins; once the two hold disjoint
   * shares that cover the topic, prints the rebalanced event and waits for stdin.
   */
  private static JsonObject group(String bootstrap, JsonObject params, BufferedReader stdin)
      throws Exception {
    String topic = params.get("topic").getAsString();
    String group = params.get("group").getAsString();
    int partitions = params.get("partitions").getAsInt();
    JsonObject res = new JsonObject();
    Member a = new Member(bootstrap, topic, group, "kafka-iggy-compat-a");
    Member b = new Member(bootstrap, topic, group, "kafka-iggy-compat-b");
    a.thread.start();
    long dl = deadline();
    while (a.assigned.size() != partitions) {
      a.failed();
      check(dl, "member A alone was assigned " + a.assigned + " of " + partitions + " partitions");
      Thread.sleep(20);
    }
    res.add("before", ints(a.assigned));
    b.thread.start();
    while (true) {
      a.failed();
      b.failed();
      Set<Integer> union = new TreeSet<>(a.assigned);
      union.addAll(b.assigned);
      if (!a.assigned.isEmpty()
          && !b.assigned.isEmpty()
          && a.assigned.size() + b.assigned.size() == partitions
          && union.size() == partitions) {
        break;
      }
      check(dl, "after B joined: A has " + a.assigned + ", B has " + b.assigned);
      Thread.sleep(20);
    }
    res.add("a", ints(a.assigned));
    res.add("b", ints(b.assigned));
    res.addProperty("a_member", a.memberId);
    res.addProperty("b_member", b.memberId);
    JsonObject ev = new JsonObject();
    ev.addProperty("event", "rebalanced");
    ev.add("a", ints(a.assigned));
    ev.add("b", ints(b.assigned));
    OUT.println(ev);
    stdin.readLine(); // the Go side has described the group
    a.stop.set(true);
    b.stop.set(true);
    a.thread.join(20_000);
    b.thread.join(20_000);
    res.addProperty("consumed", a.consumed + b.consumed);
    return res;
  }

  /** Reads 4 records in the group, commits offset 4, closes; a second member resumes. */
  private static JsonObject commit(String bootstrap, JsonObject params) throws Exception {
    String topic = params.get("topic").getAsString();
    String group = params.get("group").getAsString();
    int records = params.get("records").getAsInt();
    TopicPartition tp = new TopicPartition(topic, 0);
    JsonObject res = new JsonObject();
    long dl = deadline();
    try (KafkaConsumer<byte[], byte[]> c = consumer(consumerProps(bootstrap, group, "compat-1"))) {
      c.subscribe(Collections.singletonList(topic));
      int n = 0;
      while (n < 4) {
        check(dl, "first member read " + n + " of 4 records");
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
          n++;
        }
      }
      c.commitSync(Collections.singletonMap(tp, new OffsetAndMetadata(4)), Duration.ofSeconds(15));
      OffsetAndMetadata got =
          c.committed(Collections.singleton(tp), Duration.ofSeconds(15)).get(tp);
      res.addProperty("committed", got == null ? -1 : got.offset());
    }
    try (KafkaConsumer<byte[], byte[]> c = consumer(consumerProps(bootstrap, group, "compat-2"))) {
      c.subscribe(Collections.singletonList(topic));
      long first = -1;
      int n = 0;
      long last = -1;
      while (last < records - 1) {
        check(dl, "second member read up to offset " + last);
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
          if (first < 0) {
            first = r.offset();
          }
          last = r.offset();
          n++;
        }
      }
      res.addProperty("resumed", first);
      res.addProperty("resumed_count", n);
    }
    return res;
  }

  /** offsetsForTimes for a timestamp inside and one after the data, then a read at the first. */
  private static JsonObject seek(String bootstrap, JsonObject params) throws Exception {
    String topic = params.get("topic").getAsString();
    long ts = params.get("timestamp").getAsLong();
    long after = params.get("after").getAsLong();
    TopicPartition tp = new TopicPartition(topic, 0);
    JsonObject res = new JsonObject();
    try (KafkaConsumer<byte[], byte[]> c = consumer(consumerProps(bootstrap, null, "compat-seek"))) {
      c.assign(Collections.singletonList(tp));
      Map<TopicPartition, OffsetAndTimestamp> got =
          c.offsetsForTimes(Collections.singletonMap(tp, ts), Duration.ofSeconds(15));
      OffsetAndTimestamp ot = got.get(tp);
      res.addProperty("offset", ot == null ? -1 : ot.offset());
      got = c.offsetsForTimes(Collections.singletonMap(tp, after), Duration.ofSeconds(15));
      res.addProperty("after_offset", got.get(tp) == null ? -1 : got.get(tp).offset());
      if (ot != null) {
        c.seek(tp, ot.offset());
        long dl = deadline();
        while (true) {
          check(dl, "no record after seeking to " + ot.offset());
          List<ConsumerRecord<byte[], byte[]>> rs = c.poll(Duration.ofMillis(100)).records(tp);
          if (!rs.isEmpty()) {
            res.addProperty("read_offset", rs.get(0).offset());
            res.addProperty("read_timestamp", rs.get(0).timestamp());
            break;
          }
        }
      }
    }
    return res;
  }

  /** A producer with the client's stock settings (only bootstrap and serializers). */
  private static JsonObject idempotent(String bootstrap, JsonObject params) throws Exception {
    String topic = params.get("topic").getAsString();
    int records = params.get("records").getAsInt();
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    JsonObject res = new JsonObject();
    JsonArray offsets = new JsonArray();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
      for (int i = 0; i < records; i++) {
        fs.add(
            producer.send(
                new ProducerRecord<>(
                    topic, 0, ("k" + i).getBytes(StandardCharsets.UTF_8), ("v" + i).getBytes(StandardCharsets.UTF_8))));
      }
      producer.flush();
      for (java.util.concurrent.Future<RecordMetadata> f : fs) {
        offsets.add(f.get(20, TimeUnit.SECONDS).offset());
      }
    }
    res.add("offsets", offsets);
    res.addProperty("idempotent_default", true);
    return res;
  }

  private static String errorName(Throwable e) {
    Throwable c = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    if (c instanceof ApiException) {
      return Errors.forException(c).name();
    }
    return "client error: " + c;
  }

  private static String retention(Admin admin, String topic) throws Exception {
    ConfigResource cr = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    Config cfg = admin.describeConfigs(Collections.singleton(cr)).all().get(15, TimeUnit.SECONDS).get(cr);
    ConfigEntry e = cfg.get("retention.ms");
    return e == null ? "(not reported)" : e.value();
  }

  /** Create, create again, describe, describe configs, alter, describe configs, delete. */
  private static JsonObject admin(String bootstrap, JsonObject params) throws Exception {
    String topic = params.get("topic").getAsString();
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    JsonObject res = new JsonObject();
    try (Admin admin = Admin.create(p)) {
      Map<String, String> cfg = new HashMap<>();
      cfg.put("retention.ms", "3600000");
      NewTopic nt = new NewTopic(topic, 3, (short) 1).configs(cfg);
      try {
        admin.createTopics(Collections.singleton(nt)).all().get(15, TimeUnit.SECONDS);
        res.addProperty("create", "NONE");
      } catch (Exception e) {
        res.addProperty("create", errorName(e));
      }
      try {
        admin.createTopics(Collections.singleton(nt)).all().get(15, TimeUnit.SECONDS);
        res.addProperty("create_again", "NONE");
      } catch (Exception e) {
        res.addProperty("create_again", errorName(e));
      }
      TopicDescription td =
          admin.describeTopics(Collections.singleton(topic)).allTopicNames().get(15, TimeUnit.SECONDS).get(topic);
      res.addProperty("partitions", td.partitions().size());
      res.addProperty("retention", retention(admin, topic));
      ConfigResource cr = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      Map<ConfigResource, Collection<AlterConfigOp>> alter = new HashMap<>();
      alter.put(
          cr,
          Collections.singletonList(
              new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET)));
      admin.incrementalAlterConfigs(alter).all().get(15, TimeUnit.SECONDS);
      // A broker applies an altered config asynchronously: poll until it shows.
      String before = res.get("retention").getAsString();
      String after = retention(admin, topic);
      long until = System.currentTimeMillis() + 15_000;
      while (after.equals(before) && System.currentTimeMillis() < until) {
        Thread.sleep(50);
        after = retention(admin, topic);
      }
      res.addProperty("retention_after_alter", after);
      admin.deleteTopics(Collections.singleton(topic)).all().get(15, TimeUnit.SECONDS);
      res.addProperty("delete", "NONE");
      long dl = deadline();
      String gone = "NONE";
      while (true) {
        try {
          admin.describeTopics(Collections.singleton(topic)).allTopicNames().get(15, TimeUnit.SECONDS);
          gone = "NONE";
        } catch (Exception e) {
          gone = errorName(e);
        }
        if (!gone.equals("NONE") || System.currentTimeMillis() > dl) {
          break;
        }
        Thread.sleep(50);
      }
      res.addProperty("describe_after_delete", gone);
    }
    return res;
  }
}
