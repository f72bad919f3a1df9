import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka's Java consumer and admin client, driven over JSON lines (see tests/clients/line_client.py).
 *
 * <p>Arguments: bootstrap servers, topic, partition count, session timeout ms, heartbeat interval ms, and optionally
 * the group protocol ("classic", the default, or "consumer": KIP-848, whose timings are the coordinator's). Each request
 * on stdin is one JSON object with "id" and "op"; each answer on stdout carries the same "id" and a "result" (or an
 * "error" when the call itself failed). Consumers poll on threads of their own; calls on a consumer run on its
 * thread, as the consumer requires. The clients' own logging goes to stderr.
 */
public final class GroupClient {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TIMEOUT_S = 60;

    private final String bootstrap;
    private final String topic;
    private final int partitions;
    private final int sessionMs;
    private final int heartbeatMs;
    private final String groupProtocol;
    private final Admin admin;
    private final Map<String, Member> members = new LinkedHashMap<>();

    private GroupClient(String[] args) {
        bootstrap = args[0];
        topic = args[1];
        partitions = Integer.parseInt(args[2]);
        sessionMs = Integer.parseInt(args[3]);
        heartbeatMs = Integer.parseInt(args[4]);
        groupProtocol = args.length > 5 ? args[5] : "classic";
        Properties settings = new Properties();
        settings.put("bootstrap.servers", bootstrap);
        settings.put("client.id", "clients-admin");
        admin = Admin.create(settings);
    }

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err); // anything the clients print stays off the protocol
        GroupClient client = new GroupClient(args);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode request = JSON.readTree(line);
            String op = request.get("op").asText();
            ObjectNode answer = JSON.createObjectNode();
            answer.put("id", request.get("id").asLong());
            try {
                answer.set("result", JSON.valueToTree(client.handle(op, request)));
            } catch (Exception e) {
                answer.put("error", describe(e));
            }
            protocol.println(JSON.writeValueAsString(answer));
            if (op.equals("exit")) {
                break;
            }
        }
        client.closeAll();
        System.exit(0);
    }

    private Object handle(String op, JsonNode request) throws Exception {
        switch (op) {
            case "join": {
                String handle = "m" + members.size();
                JsonNode instance = request.get("instance_id");
                JsonNode pattern = request.get("pattern");
                members.put(handle, new Member(request.get("group").asText(), request.get("name").asText(),
                        instance == null || instance.isNull() ? null : instance.asText(),
                        pattern == null || pattern.isNull() ? null : pattern.asText()));
                return handle;
            }
            case "assignment":
                return new TreeSet<>(member(request).owned);
            case "owned":
                return new TreeSet<>(member(request).ownedByTopic);
            case "assignments":
                return member(request).assignments;
            case "commit":
                return member(request).commit(request.get("offsets"));
            case "committed":
                return member(request).committed(request.get("partitions"));
            case "hold":
                member(request).hold();
                return null;
            case "close":
                member(request).close();
                return null;
            case "list_groups": {
                Map<String, String> groups = new TreeMap<>();
                for (GroupListing g : admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get()) {
                    groups.put(g.groupId(), g.groupState().map(Object::toString).orElse(""));
                }
                return groups;
            }
            case "describe":
                return describeGroup(request.get("group").asText());
            case "group_offsets":
                return groupOffsets(request.get("group").asText());
            case "reset":
                reset(request.get("group").asText(), request.get("to"));
                return null;
            case "delete":
                try {
                    admin.deleteConsumerGroups(List.of(request.get("group").asText())).all().get();
                    return null;
                } catch (ExecutionException e) {
                    return describe(e.getCause());
                }
            case "exit":
                return null;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private Member member(JsonNode request) {
        Member found = members.get(request.get("member").asText());
        if (found == null) {
            throw new IllegalArgumentException("unknown member " + request.get("member"));
        }
        return found;
    }

    private Map<String, Object> describeGroup(String group) throws Exception {
        ConsumerGroupDescription described = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
        List<Map<String, Object>> rows = new ArrayList<>();
        for (MemberDescription m : described.members()) {
            Map<String, Object> row = new HashMap<>();
            row.put("client_id", m.clientId());
            row.put("instance_id", m.groupInstanceId().orElse(null));
            row.put("partitions", partitionsOf(m.assignment().topicPartitions()));
            rows.add(row);
        }
        Map<String, Object> result = new HashMap<>();
        result.put("state", described.groupState().toString());
        result.put("members", rows);
        return result;
    }

    private Map<String, Long> groupOffsets(String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        Map<String, Long> result = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            if (e.getKey().topic().equals(topic) && e.getValue() != null) {
                result.put(Integer.toString(e.getKey().partition()), e.getValue().offset());
            }
        }
        return result;
    }

    /** The admin's way to reset: listOffsets for the earliest or latest, then alterConsumerGroupOffsets. */
    private void reset(String group, JsonNode to) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> targets = new HashMap<>();
        if (to.isNumber()) {
            for (int p = 0; p < partitions; p++) {
                targets.put(new TopicPartition(topic, p), new OffsetAndMetadata(to.asLong()));
            }
        } else {
            OffsetSpec spec = to.asText().equals("earliest") ? OffsetSpec.earliest() : OffsetSpec.latest();
            Map<TopicPartition, OffsetSpec> wanted = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                wanted.put(new TopicPartition(topic, p), spec);
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> listed = admin.listOffsets(wanted).all().get();
            for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : listed.entrySet()) {
                targets.put(e.getKey(), new OffsetAndMetadata(e.getValue().offset()));
            }
        }
        admin.alterConsumerGroupOffsets(group, targets).all().get();
    }

    private void closeAll() {
        for (Member m : members.values()) {
            try {
                m.close();
            } catch (Exception e) {
                System.err.println("closing " + m.name + ": " + describe(e));
            }
        }
        admin.close(Duration.ofSeconds(10));
    }

    private static TreeSet<String> namesOf(Collection<TopicPartition> owned) {
        TreeSet<String> names = new TreeSet<>();
        for (TopicPartition tp : owned) {
            names.add(tp.topic() + "-" + tp.partition());
        }
        return names;
    }

    private static TreeSet<Integer> partitionsOf(Collection<TopicPartition> owned) {
        TreeSet<Integer> numbers = new TreeSet<>();
        for (TopicPartition tp : owned) {
            numbers.add(tp.partition());
        }
        return numbers;
    }

    private static String describe(Throwable e) {
        Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }

    /** One consumer, polled every 100 ms on its own thread, which also runs every call made on it. */
    private final class Member implements Runnable {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final BlockingQueue<FutureTask<?>> calls = new LinkedBlockingQueue<>();
        final Thread thread;
        volatile Set<Integer> owned = Set.of();
        volatile Set<String> ownedByTopic = Set.of();
        volatile int assignments;
        volatile boolean stopped;
        volatile boolean held;
        volatile Exception failure;

        /** Subscribed to the client's topic, or (group protocol {@code consumer}) to {@code pattern}: a
         * {@link SubscriptionPattern}, which the coordinator resolves in RE2 syntax. */
        Member(String group, String name, String instanceId, String pattern) {
            this.name = name;
            Properties settings = new Properties();
            settings.put("bootstrap.servers", bootstrap);
            settings.put("group.id", group);
            settings.put("client.id", name);
            if (instanceId != null) {
                settings.put("group.instance.id", instanceId);
            }
            settings.put("enable.auto.commit", "false");
            settings.put("auto.offset.reset", "earliest");
            settings.put("group.protocol", groupProtocol);
            if (groupProtocol.equals("classic")) {
                settings.put("session.timeout.ms", Integer.toString(sessionMs));
                settings.put("heartbeat.interval.ms", Integer.toString(heartbeatMs));
            }
            settings.put("key.deserializer", ByteArrayDeserializer.class.getName());
            settings.put("value.deserializer", ByteArrayDeserializer.class.getName());
            consumer = new KafkaConsumer<>(settings);
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    assignments++;
                }
            };
            if (pattern == null) {
                consumer.subscribe(List.of(topic), listener);
            } else {
                consumer.subscribe(new SubscriptionPattern(pattern), listener);
            }
            thread = new Thread(this, "member-" + name);
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void run() {
            while (!stopped) {
                if (failure == null && !held) {
                    try {
                        consumer.poll(Duration.ofMillis(100));
                        Set<TopicPartition> assigned = consumer.assignment();
                        owned = partitionsOf(assigned);
                        ownedByTopic = namesOf(assigned);
                    } catch (Exception e) { // fatal for the consumer (fenced): keep answering calls
                        failure = e;
                    }
                }
                try {
                    FutureTask<?> task = calls.poll(failure == null && !held ? 1 : 100, TimeUnit.MILLISECONDS);
                    if (task != null) {
                        task.run();
                    }
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        <T> T call(Callable<T> action) throws Exception {
            FutureTask<T> task = new FutureTask<>(action);
            calls.add(task);
            try {
                return task.get(TIMEOUT_S, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
            }
        }

        String commit(JsonNode offsets) throws Exception {
            Map<TopicPartition, OffsetAndMetadata> wanted = new HashMap<>();
            offsets.fields().forEachRemaining(e -> wanted.put(
                    new TopicPartition(topic, Integer.parseInt(e.getKey())), new OffsetAndMetadata(e.getValue().asLong())));
            try {
                call(() -> {
                    consumer.commitSync(wanted);
                    return null;
                });
                return null;
            } catch (Exception e) {
                return describe(e);
            }
        }

        Map<String, Long> committed(JsonNode numbers) throws Exception {
            Set<TopicPartition> wanted = new java.util.HashSet<>();
            numbers.forEach(n -> wanted.add(new TopicPartition(topic, n.asInt())));
            Map<TopicPartition, OffsetAndMetadata> found = call(() -> consumer.committed(wanted));
            Map<String, Long> result = new TreeMap<>();
            for (TopicPartition tp : wanted) {
                OffsetAndMetadata value = found.get(tp);
                result.put(Integer.toString(tp.partition()), value == null ? null : value.offset());
            }
            return result;
        }

        /** Poll no more (calls still run; the heartbeat thread goes on); set on this member's thread, between polls. */
        void hold() throws Exception {
            call(() -> {
                held = true;
                return null;
            });
        }

        void close() throws Exception {
            if (stopped) {
                return;
            }
            call(() -> {
                consumer.close(Duration.ofSeconds(10));
                return null;
            });
            stopped = true;
            thread.join(10_000);
        }
    }
}
