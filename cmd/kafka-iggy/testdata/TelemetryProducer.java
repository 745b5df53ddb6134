// A Kafka producer for telemetry_test.go, run as a single source file
// (java -cp 'lib/*' TelemetryProducer.java BOOTSTRAP TOPIC CLIENT_ID).
// It produces 20 records, prints "produced", then keeps the producer open
// (so it pushes its metrics, enable.metrics.push being on by default) until
// its standard input closes, and closes the producer (the terminating push).

import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TelemetryProducer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", args[2]);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 20; i++) {
                producer.send(new ProducerRecord<>(args[1], "k" + i, "v" + i)).get();
            }
            System.out.println("produced");
            System.out.flush();
            while (System.in.read() >= 0) {
            }
        }
        System.out.println("closed");
    }
}
