// Consume-transform-produce in transactions with the Java clients of Kafka
// 4.x, for txnctp_java_test.go (the scenario of txnctp_test.go). Run as a
// single-file program against kafka-clients 4.x:
//
//   java -cp '<lib>/*' TxnCTP.java <bootstrap> <in> <out> <group> <transactional.id> <per-txn>
//
// A KafkaConsumer of <in> in <group> (subscribe, read_committed, no auto
// commit) and a transactional KafkaProducer run two transactions of
// <per-txn> input records each: every record goes to <out> as "out-" +
// value, alternating between partitions 0 and 1, and
// sendOffsetsToTransaction adds the group's next offset with the consumer's
// group metadata; the first commits, the second aborts (its records flushed
// first, so that they reach the broker). Then <out>'s two partitions are read
// from the start at read_committed and at read_uncommitted. It prints one
// JSON line {"read_committed":[..],"read_uncommitted":[..]} and exits 1 with
// the error on stderr when a step fails.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnCTP {
    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String group, String level) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, level);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    // readAll reads partitions 0 and 1 of topic from the start until it has
    // n values, then for one more second (to see anything it must not read).
    static List<String> readAll(String bootstrap, String topic, String level, int n) {
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, "txn-ctp-read-" + System.nanoTime(), level)) {
            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 30_000, extra = 0;
            while (System.currentTimeMillis() < deadline && (extra == 0 || System.currentTimeMillis() < extra)) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                    got.add(new String(r.value(), StandardCharsets.UTF_8));
                }
                if (got.size() >= n && extra == 0) {
                    extra = System.currentTimeMillis() + 1000;
                }
            }
        }
        return got;
    }

    static String json(List<String> vs) {
        return vs.stream().map(v -> "\"" + v + "\"").collect(Collectors.joining(",", "[", "]"));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], in = args[1], out = args[2], group = args[3], txid = args[4];
        int per = Integer.parseInt(args[5]);
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> cons = consumer(bootstrap, group, "read_committed");
             KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(pp)) {
            cons.subscribe(List.of(in));
            prod.initTransactions();
            long deadline = System.currentTimeMillis() + 60_000;
            List<ConsumerRecord<byte[], byte[]>> pending = new ArrayList<>();
            for (boolean commit : new boolean[] {true, false}) {
                prod.beginTransaction();
                int n = 0;
                long next = -1;
                while (n < per) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("consumed " + n + " records of " + per);
                    }
                    if (pending.isEmpty()) {
                        cons.poll(Duration.ofMillis(100)).forEach(pending::add);
                        continue;
                    }
                    ConsumerRecord<byte[], byte[]> r = pending.remove(0);
                    byte[] v = ("out-" + new String(r.value(), StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
                    prod.send(new ProducerRecord<>(out, n % 2, null, v));
                    next = r.offset() + 1;
                    n++;
                }
                prod.sendOffsetsToTransaction(Map.of(new TopicPartition(in, 0), new OffsetAndMetadata(next)), cons.groupMetadata());
                if (commit) {
                    prod.commitTransaction();
                } else {
                    prod.flush();
                    prod.abortTransaction();
                }
            }
        } catch (Exception e) {
            System.err.println("TxnCTP: " + e);
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("{\"read_committed\":" + json(readAll(bootstrap, out, "read_committed", per))
            + ",\"read_uncommitted\":" + json(readAll(bootstrap, out, "read_uncommitted", 2 * per)) + "}");
    }
}
