// KafkaSasl: one SASL_PLAINTEXT round trip with kafka-clients, for
// cmd/kafka-iggy's sasl_java_test.go.
//
//   java KafkaSasl BOOTSTRAP MECHANISM USER PASSWORD TOPIC
//
// Produces one record (acks=all) and consumes it back (assign,
// seekToBeginning). Prints "OK" when the record came back, or
// "FAIL <exception class>: <message>" for the first Kafka exception in the
// cause chain (SaslAuthenticationException for wrong credentials).

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class KafkaSasl {
    public static void main(String[] args) {
        String bootstrap = args[0], mech = args[1], user = args[2], pass = args[3], topic = args[4];
        String module = mech.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        common.put("security.protocol", "SASL_PLAINTEXT");
        common.put("sasl.mechanism", mech);
        common.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + pass + "\";");
        String value = "java-sasl-" + topic;
        try {
            Properties pp = new Properties();
            pp.putAll(common);
            pp.put("acks", "all");
            pp.put("max.block.ms", "20000");
            pp.put("delivery.timeout.ms", "20000");
            pp.put("request.timeout.ms", "10000");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                p.send(new ProducerRecord<>(topic, 0, null, value)).get();
            }
            Properties cp = new Properties();
            cp.putAll(common);
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
                TopicPartition tp = new TopicPartition(topic, 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long end = System.currentTimeMillis() + 20000;
                while (System.currentTimeMillis() < end) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        if (value.equals(r.value())) {
                            System.out.println("OK");
                            return;
                        }
                    }
                }
            }
            System.out.println("FAIL timeout: record not consumed");
        } catch (Throwable t) {
            Throwable k = t;
            while (k != null && !(k instanceof KafkaException)) {
                k = k.getCause();
            }
            if (k == null) {
                k = t;
            }
            System.out.println("FAIL " + k.getClass().getName() + ": " + k.getMessage());
        }
    }
}
