// KafkaSasl: one SASL round trip with kafka-clients, for
// cmd/kafka-iggy's sasl_java_test.go and tls_java_test.go.
//
//   java KafkaSasl BOOTSTRAP MECHANISM USER PASSWORD TOPIC [KEY=VALUE...]
//
// For OAUTHBEARER, PASSWORD is the JWT (handed to the client by
// TokenHandler) and USER its principal; an empty PASSWORD uses the
// client's default (unsecured) login handler, an unsigned token with sub
// USER (unsecuredLoginStringClaim_sub). MECHANISM NONE configures no SASL.
// KEY=VALUE pairs are client properties set last (security.protocol=SSL,
// ssl.truststore.type=PEM, ...).
//
// Produces one record (acks=all) and consumes it back (assign,
// seekToBeginning). Prints "OK" when the record came back, or
// "FAIL <exception class>: <message>" for the first Kafka exception in the
// cause chain (SaslAuthenticationException for wrong credentials).

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.auth.SaslExtensionsCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class KafkaSasl {
    /** Hands the client the JWT of the JAAS option "token". */
    public static class TokenHandler implements AuthenticateCallbackHandler {
        private String token, principal;

        @Override
        public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
            Map<String, ?> opts = entries.get(0).getOptions();
            token = (String) opts.get("token");
            principal = (String) opts.get("principal");
        }

        @Override
        public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
            for (Callback cb : callbacks) {
                if (cb instanceof OAuthBearerTokenCallback) {
                    ((OAuthBearerTokenCallback) cb).token(new OAuthBearerToken() {
                        public String value() { return token; }
                        public Set<String> scope() { return Set.of(); }
                        public long lifetimeMs() { return System.currentTimeMillis() + 3_600_000L; }
                        public String principalName() { return principal; }
                        public Long startTimeMs() { return System.currentTimeMillis(); }
                    });
                } else if (!(cb instanceof SaslExtensionsCallback)) {
                    throw new UnsupportedCallbackException(cb);
                }
            }
        }

        @Override
        public void close() {}
    }

    public static void main(String[] args) {
        String bootstrap = args[0], mech = args[1], user = args[2], pass = args[3], topic = args[4];
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        common.put("security.protocol", "SASL_PLAINTEXT");
        if (mech.equals("NONE")) {
            common.put("security.protocol", "PLAINTEXT");
        } else {
            common.put("sasl.mechanism", mech);
        }
        if (mech.equals("NONE")) {
            // no SASL
        } else if (mech.equals("OAUTHBEARER") && pass.isEmpty()) {
            // Kafka's default login handler: an unsigned token with sub USER.
            common.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\""
                    + user + "\";");
        } else if (mech.equals("OAUTHBEARER")) {
            common.put("sasl.login.callback.handler.class", TokenHandler.class.getName());
            common.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required token=\""
                    + pass + "\" principal=\"" + user + "\";");
        } else {
            String module = mech.equals("PLAIN")
                    ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                    : "org.apache.kafka.common.security.scram.ScramLoginModule";
            common.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + pass + "\";");
        }
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            common.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
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
