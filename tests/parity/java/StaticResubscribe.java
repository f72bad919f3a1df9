import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A static member of Kafka's Java consumer (classic group protocol) that restarts subscribed to another topic
 * (tests/parity/test_clients.py, issue 26).
 *
 * <p>Arguments: bootstrap servers, group id, group.instance.id, session timeout ms, then the topic of each run. For
 * each topic in turn a new KafkaConsumer with the same instance id subscribes to it, polls until it holds partitions,
 * and closes (a static member's close sends no LeaveGroup). Each run prints one JSON line on stdout: the topic, the
 * partitions held once polled, the generation it joined, and the rebalance listener's calls in order. The client's
 * own logging goes to stderr.
 */
public final class StaticResubscribe {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err); // anything the client prints stays off the results
        String bootstrap = args[0];
        String group = args[1];
        String instanceId = args[2];
        String sessionMs = args[3];
        for (int i = 4; i < args.length; i++) {
            out.println(JSON.writeValueAsString(run(bootstrap, group, instanceId, sessionMs, args[i])));
        }
        System.exit(0);
    }

    private static Map<String, Object> run(String bootstrap, String group, String instanceId, String sessionMs,
                                           String topic) {
        Properties settings = new Properties();
        settings.put("bootstrap.servers", bootstrap);
        settings.put("group.id", group);
        settings.put("group.instance.id", instanceId);
        settings.put("client.id", "parity-java");
        settings.put("session.timeout.ms", sessionMs);
        settings.put("heartbeat.interval.ms", "500");
        settings.put("enable.auto.commit", "false");
        settings.put("key.deserializer", ByteArrayDeserializer.class.getName());
        settings.put("value.deserializer", ByteArrayDeserializer.class.getName());
        List<String> calls = new ArrayList<>();
        Map<String, Object> result = new LinkedHashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    calls.add("revoked " + names(partitions));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    calls.add("assigned " + names(partitions));
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    calls.add("lost " + names(partitions));
                }
            });
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (consumer.assignment().isEmpty()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("no assignment after " + TIMEOUT);
                }
                consumer.poll(Duration.ofMillis(100));
            }
            result.put("topic", topic);
            result.put("assignment", names(consumer.assignment()));
            result.put("generation", consumer.groupMetadata().generationId());
            result.put("listener", calls);
        }
        return result;
    }

    private static List<String> names(Collection<TopicPartition> partitions) {
        TreeSet<String> sorted = new TreeSet<>();
        for (TopicPartition tp : partitions) {
            sorted.add(tp.toString());
        }
        return new ArrayList<>(sorted);
    }
}
