import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A stateful Kafka Streams word count with stock settings (at_least_once,
 * default commit interval, caching, RocksDB): lines from INPUT are split into
 * words, re-keyed by word (a repartition topic), counted in the state store
 * "counts" (a changelog topic) and written to OUTPUT as word -> count.
 * Streams creates both internal topics itself, with its own configs
 * (cleanup.policy=compact for the changelog, message.timestamp.type and
 * segment settings for the repartition topic), and purges the consumed
 * repartition records with DeleteRecords.
 *
 * Usage: StreamsWordCount BOOTSTRAP APPLICATION_ID STATE_DIR INPUT OUTPUT [GUARANTEE]
 * GUARANTEE is processing.guarantee (default at_least_once); with
 * exactly_once_v2 the app commits every 100 ms, its internal topics get
 * replication factor 1 (one broker) and its consumer reads read_committed
 * (Streams' own setting for EOS). Runs until SIGTERM; prints "state OLD -> NEW" on stderr for every
 * transition and "running" on stdout once RUNNING.
 */
public final class StreamsWordCount {
    public static void main(String[] args) throws Exception {
        if (args.length != 5 && args.length != 6) {
            System.err.println("usage: StreamsWordCount BOOTSTRAP APPLICATION_ID STATE_DIR INPUT OUTPUT [GUARANTEE]");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        if (args.length == 6 && !args[5].equals(StreamsConfig.AT_LEAST_ONCE)) {
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[5]);
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
            props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[3])
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word)
                .count(Materialized.as("counts"))
                .toStream()
                .to(args[4], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((next, old) -> {
            System.err.println("state " + old + " -> " + next);
            if (next == KafkaStreams.State.RUNNING) {
                System.out.println("running");
                System.out.flush();
            }
            if (next == KafkaStreams.State.ERROR || next == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            done.countDown();
        }));
        streams.start();
        done.await();
        System.exit(streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
    }
}
