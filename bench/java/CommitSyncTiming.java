import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka's Java consumer committing synchronously after each poll, as an at-least-once application does: times each
 * {@code commitSync()} of every assigned partition.
 *
 * <p>Arguments: bootstrap servers, topic, group, warm-up commits, timed commits. The consumer subscribes with the
 * classic protocol at its defaults (auto-commit off), polls until it owns partitions, then loops {@code poll(0)},
 * {@code commitSync(offsets)}, the offsets one higher each time. Prints one JSON line: the timed latencies in ms.
 */
public final class CommitSyncTiming {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int warmup = Integer.parseInt(args[3]);
        int timed = Integer.parseInt(args[4]);
        Properties settings = new Properties();
        settings.put("bootstrap.servers", bootstrap);
        settings.put("group.id", group);
        settings.put("client.id", "commit-sync-timing");
        settings.put("enable.auto.commit", "false");
        settings.put("key.deserializer", ByteArrayDeserializer.class.getName());
        settings.put("value.deserializer", ByteArrayDeserializer.class.getName());
        List<Double> latencies = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings)) {
            List<TopicPartition> owned = new ArrayList<>();
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    owned.removeAll(partitions);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    owned.addAll(partitions);
                }
            });
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (owned.isEmpty()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("no partitions assigned within 60 s");
                }
                consumer.poll(Duration.ofMillis(100));
            }
            for (int i = 0; i < warmup + timed; i++) {
                consumer.poll(Duration.ZERO);
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition tp : owned) {
                    offsets.put(tp, new OffsetAndMetadata(i + 1));
                }
                long start = System.nanoTime();
                consumer.commitSync(offsets);
                double ms = (System.nanoTime() - start) / 1e6;
                if (i >= warmup) {
                    latencies.add(ms);
                }
            }
        }
        StringBuilder out = new StringBuilder("{\"latencies_ms\": [");
        for (int i = 0; i < latencies.size(); i++) {
            out.append(i == 0 ? "" : ", ").append(String.format("%.3f", latencies.get(i)));
        }
        System.out.println(out.append("]}"));
    }
}
