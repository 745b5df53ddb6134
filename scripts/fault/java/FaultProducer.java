import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java producer of the fault workload (scripts/fault): an idempotent
 * KafkaProducer (acks=all, retries without limit) bound to one sidecar that
 * writes numbered records, key "ID-SEQUENCE" and the same text as value, at
 * RATE records a second until its standard input closes, then flushes and
 * exits. Every acknowledged record is printed on standard output as
 * "ACK partition offset key", every failed one as "ERR key message".
 *
 * Usage: FaultProducer BOOTSTRAP TOPIC ID RATE
 */
public final class FaultProducer {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: FaultProducer BOOTSTRAP TOPIC ID RATE");
            System.exit(2);
        }
        String bootstrap = args[0], topic = args[1], id = args[2];
        int rate = Integer.parseInt(args[3]);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "fault-" + id);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(Integer.MAX_VALUE));
        p.put("max.in.flight.requests.per.connection", "5");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "600000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "600000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // only the end of input matters
                }
            } catch (Exception ignored) {
                // treated as the end of input
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        Object out = new Object();
        long intervalNanos = 1_000_000_000L / Math.max(1, rate);
        long next = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (long seq = 0; !stop.get(); seq++) {
                String key = String.format("%s-%09d", id, seq);
                producer.send(new ProducerRecord<>(topic, key, key), (md, err) -> {
                    synchronized (out) {
                        if (err != null) {
                            System.out.println("ERR " + key + " " + err.toString().replace('\n', ' '));
                        } else {
                            System.out.println("ACK " + md.partition() + " " + md.offset() + " " + key);
                        }
                        System.out.flush();
                    }
                });
                next += intervalNanos;
                long wait = next - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
                } else {
                    next = System.nanoTime();
                }
            }
            producer.flush();
        }
    }
}
