import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's Java producer with its defaults (idempotent, acks=all) and a codec: produces COUNT records with a key, a
 * header and a timestamp to one partition, then prints "partition offset" per acknowledged record.
 *
 * Arguments: BOOTSTRAP TOPIC PARTITION COUNT CODEC.
 */
public final class ProduceCheck {
    private ProduceCheck() {
    }

    public static void main(String[] args) throws Exception {
        Properties config = new Properties();
        config.put("bootstrap.servers", args[0]);
        config.put("compression.type", args[4]);
        config.put("linger.ms", "5");
        config.put("key.serializer", ByteArraySerializer.class.getName());
        config.put("value.serializer", ByteArraySerializer.class.getName());
        String topic = args[1];
        int partition = Integer.parseInt(args[2]);
        int count = Integer.parseInt(args[3]);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, partition,
                    1_767_225_600_000L + i, bytes("key-" + i), bytes("java-" + i));
                record.headers().add("n", bytes(Integer.toString(i)));
                sent.add(producer.send(record));
            }
            for (Future<RecordMetadata> future : sent) {
                RecordMetadata metadata = future.get();
                System.out.println(metadata.partition() + " " + metadata.offset());
            }
        }
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
