import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka's Java consumer reading a whole topic from the beginning: the time from the first poll to the last record.
 *
 * <p>Arguments: bootstrap servers, topic, partitions, records expected. The consumer (defaults, no group: manual
 * assignment of every partition, from the earliest offset) polls until it has seen every record. Prints one JSON
 * line: records and seconds.
 */
public final class FetchTiming {
    public static void main(String[] args) throws Exception {
        Properties settings = new Properties();
        settings.put("bootstrap.servers", args[0]);
        settings.put("client.id", "fetch-timing");
        settings.put("auto.offset.reset", "earliest");
        settings.put("key.deserializer", ByteArrayDeserializer.class.getName());
        settings.put("value.deserializer", ByteArrayDeserializer.class.getName());
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long expected = Long.parseLong(args[3]);
        long seen = 0;
        long bytes = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings)) {
            List<TopicPartition> all = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                all.add(new TopicPartition(topic, p));
            }
            consumer.assign(all);
            consumer.seekToBeginning(all);
            long start = System.nanoTime();
            long deadline = start + Duration.ofSeconds(300).toNanos();
            while (seen < expected && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                for (var record : records) {
                    seen++;
                    bytes += record.value() == null ? 0 : record.value().length;
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.println("{\"records\": " + seen + ", \"value_bytes\": " + bytes + ", \"seconds\": "
                    + String.format("%.4f", seconds) + "}");
        }
    }
}
