// A Java transactional producer for txn_window_test.go, run as a single
// source file (java -cp 'lib/*' TxnWindowProducer.java BOOTSTRAP TOPIC
// TRANSACTIONAL_ID N commit|abort). It starts a transaction, sends one
// record "<id>/<j>" to each partition j < N, flushes, prints "sent", waits
// for a line on its standard input (the test arms its kill), then commits or
// aborts and prints "ended".

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnWindowProducer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("transactional.id", args[2]);
        p.put("max.block.ms", "10000");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        int n = Integer.parseInt(args[3]);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int j = 0; j < n; j++) {
                producer.send(new ProducerRecord<>(args[1], j, null, args[2] + "/" + j));
            }
            producer.flush();
            System.out.println("sent");
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            if (args[4].equals("commit")) {
                producer.commitTransaction();
            } else {
                producer.abortTransaction();
            }
            System.out.println("ended");
        }
    }
}
