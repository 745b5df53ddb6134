// One member of a consumer group on the consumer group protocol (KIP-848,
// group.protocol=consumer), for consumer_protocol_test.go. Run as a
// single-file program against kafka-clients 4.x:
//
//   java -cp '<lib>/*' ConsumerProtocol.java <bootstrap> <topic> <group>
//
// It prints one JSON line per event on stdout: {"event":"assigned","p":[..]}
// and {"event":"revoked","p":[..]} (incremental, as the consumer protocol
// calls the listener), {"event":"record","p":[partition,offset]}, and
// {"event":"error","error":".."}. It commits after every poll that returned
// records and stops (closing the consumer, which leaves the group) when
// stdin closes.

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ConsumerProtocol {
    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String parts(Collection<TopicPartition> tps) {
        return tps.stream().map(tp -> Integer.toString(tp.partition())).sorted().collect(Collectors.joining(","));
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[2]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception e) {
            }
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();
        consumer.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                if (!tps.isEmpty()) {
                    consumer.commitSync();
                    emit("{\"event\":\"revoked\",\"p\":[" + parts(tps) + "]}");
                }
            }

            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                emit("{\"event\":\"assigned\",\"p\":[" + parts(tps) + "]}");
            }

            public void onPartitionsLost(Collection<TopicPartition> tps) {
                emit("{\"event\":\"revoked\",\"p\":[" + parts(tps) + "]}");
            }
        });
        try {
            while (true) {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    emit("{\"event\":\"record\",\"p\":[" + r.partition() + "," + r.offset() + "]}");
                }
                if (!recs.isEmpty()) {
                    consumer.commitSync();
                }
            }
        } catch (WakeupException e) {
            // stdin closed: leave the group
        } catch (Exception e) {
            emit("{\"event\":\"error\",\"error\":\"" + e.toString().replace("\"", "'") + "\"}");
        } finally {
            consumer.close();
        }
    }
}
