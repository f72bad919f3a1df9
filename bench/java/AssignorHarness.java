import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

/**
 * Times Apache Kafka's own assignors on the inputs of groupcoord's assignor benchmark (bench/assign_java.py).
 *
 * <p>Usage: {@code java AssignorHarness CASE_FILE ASSIGNOR WARMUP RUNS OUT_FILE}. ASSIGNOR is one of range,
 * roundrobin, sticky, cooperative-sticky (the client-side assignors, {@code ConsumerPartitionAssignor} on a
 * {@code Cluster} and a {@code GroupSubscription}), uniform or server-range (KIP-848's server-side
 * {@code UniformAssignor} and {@code RangeAssignor} on a {@code GroupSpec} and a {@code SubscribedTopicDescriber}).
 *
 * <p>The case file (written by bench/assign_java.py) holds one or more groups, line by line:
 * {@code group ID}, then {@code topic NAME PARTITIONS}, {@code member ID INSTANCE_ID|- TOPIC,TOPIC|*} ({@code *}:
 * every topic of the group) and {@code owned MEMBER TOPIC PARTITION GENERATION}; or one line
 * {@code generate GROUPS MEMBERS PARTITIONS TOPICS}: identical groups g0.. of members member-0.. subscribing to topics
 * t0.. of PARTITIONS / TOPICS partitions each, nothing owned (bench/assign.py's generated inputs).
 *
 * <p>The first call over all groups is timed alone (cold: this JVM's first call) and its assignment goes to OUT_FILE
 * ({@code group member topic partition}, tab separated; {@code -}: not written). Then WARMUP untimed calls and RUNS
 * timed calls. The inputs of each call are built before its timer starts. Prints one JSON line: cold seconds, the
 * warm runs' seconds, and the JVM's peak resident memory.
 */
public final class AssignorHarness {

    private AssignorHarness() {
    }

    /** A member: its id, its static instance id (or null) and its topics (null: every topic of its group). */
    record Member(String id, String instanceId, List<String> topics) {
    }

    /** An owned partition and the generation its owner claims it at. */
    record Owned(String member, TopicPartition partition, int generation) {
    }

    /** One consumer group's input. */
    static final class Group {
        final String id;
        final Map<String, Integer> topics = new LinkedHashMap<>();
        final List<Member> members = new ArrayList<>();
        final List<Owned> owned = new ArrayList<>();

        Group(String id) {
            this.id = id;
        }

        List<String> topicsOf(Member member) {
            return member.topics() == null ? new ArrayList<>(topics.keySet()) : member.topics();
        }
    }

    /** Builds the inputs of one assignment of one group; the returned supplier makes the (timed) call. */
    interface Peer {
        Supplier<Map<String, List<TopicPartition>>> prepare(Group group, List<Owned> owned);
    }

    static List<Group> readCase(Path file) throws IOException {
        List<Group> groups = new ArrayList<>();
        Group current = null;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "" -> { }
                case "generate" -> groups.addAll(generate(Integer.parseInt(f[1]), Integer.parseInt(f[2]),
                        Integer.parseInt(f[3]), Integer.parseInt(f[4])));
                case "group" -> {
                    current = new Group(f[1]);
                    groups.add(current);
                }
                case "topic" -> current.topics.put(f[1], Integer.parseInt(f[2]));
                case "member" -> current.members.add(new Member(f[1], f[2].equals("-") ? null : f[2],
                        f.length < 4 ? List.of() : f[3].equals("*") ? null : List.of(f[3].split(","))));
                case "owned" -> current.owned.add(new Owned(f[1], new TopicPartition(f[2], Integer.parseInt(f[3])),
                        Integer.parseInt(f[4])));
                default -> throw new IllegalArgumentException("bad case line: " + line);
            }
        }
        return groups;
    }

    static List<Group> generate(int groups, int members, int partitions, int topics) {
        List<Group> result = new ArrayList<>(groups);
        for (int g = 0; g < groups; g++) {
            Group group = new Group("g" + g);
            for (int t = 0; t < topics; t++) {
                group.topics.put("t" + t, partitions / topics);
            }
            for (int m = 0; m < members; m++) {
                group.members.add(new Member("member-" + m, null, null));
            }
            result.add(group);
        }
        return result;
    }

    static Map<String, List<TopicPartition>> ownedByMember(List<Owned> owned) {
        Map<String, List<TopicPartition>> result = new HashMap<>();
        for (Owned o : owned) {
            result.computeIfAbsent(o.member(), k -> new ArrayList<>()).add(o.partition());
        }
        return result;
    }

    static Map<String, Integer> generationByMember(List<Owned> owned) {
        Map<String, Integer> result = new HashMap<>();
        for (Owned o : owned) {
            result.merge(o.member(), o.generation(), Math::max);
        }
        return result;
    }

    static ConsumerPartitionAssignor classicAssignor(String name) {
        return switch (name) {
            case "range" -> new RangeAssignor();
            case "roundrobin" -> new RoundRobinAssignor();
            case "sticky" -> new StickyAssignor();
            case "cooperative-sticky" -> new CooperativeStickyAssignor();
            default -> throw new IllegalArgumentException("unknown assignor " + name);
        };
    }

    /**
     * A client-side assignor, given what the consumers would send: owned partitions and generation in the
     * subscription, and the sticky assignors' own user data (made the way a consumer makes it, by the assignor's
     * {@code onAssignment} and {@code subscriptionUserData}). No racks.
     */
    @SuppressWarnings("removal") // ConsumerGroupMetadata(group, generation, member, instance): how onAssignment learns the generation
    static Peer classic(String name) {
        Node node = new Node(0, "localhost", 9092);
        Node[] replicas = {node};
        return (group, owned) -> {
            List<PartitionInfo> partitions = new ArrayList<>();
            group.topics.forEach((topic, count) -> {
                for (int p = 0; p < count; p++) {
                    partitions.add(new PartitionInfo(topic, p, node, replicas, replicas));
                }
            });
            Cluster cluster = new Cluster("bench", List.of(node), partitions, Set.of(), Set.of());
            Map<String, List<TopicPartition>> owns = ownedByMember(owned);
            Map<String, Integer> generations = generationByMember(owned);
            Map<String, Subscription> subscriptions = new HashMap<>();
            for (Member member : group.members) {
                List<String> topics = group.topicsOf(member);
                List<TopicPartition> own = owns.getOrDefault(member.id(), List.of());
                int generation = generations.getOrDefault(member.id(), -1);
                ByteBuffer userData = null;
                if (!own.isEmpty() && (name.equals("sticky") || name.equals("cooperative-sticky"))) {
                    ConsumerPartitionAssignor client = classicAssignor(name);
                    client.onAssignment(new Assignment(own), new ConsumerGroupMetadata(group.id, generation,
                            member.id(), Optional.ofNullable(member.instanceId())));
                    userData = client.subscriptionUserData(new HashSet<>(topics));
                }
                Subscription subscription = new Subscription(topics, userData, own, generation, Optional.empty());
                subscription.setGroupInstanceId(Optional.ofNullable(member.instanceId()));
                subscriptions.put(member.id(), subscription);
            }
            GroupSubscription input = new GroupSubscription(subscriptions);
            return () -> {
                Map<String, List<TopicPartition>> result = new HashMap<>();
                classicAssignor(name).assign(cluster, input).groupAssignment()
                        .forEach((member, assignment) -> result.put(member, assignment.partitions()));
                return result;
            };
        };
    }

    /** One of KIP-848's server-side assignors, given the group as the broker's coordinator describes it. No racks. */
    static Peer server(ConsumerGroupPartitionAssignor assignor) {
        return (group, owned) -> {
            Map<String, Uuid> ids = new HashMap<>();
            Map<Uuid, String> names = new HashMap<>();
            Map<Uuid, Integer> counts = new HashMap<>();
            long next = 1;
            for (Map.Entry<String, Integer> topic : group.topics.entrySet()) {
                Uuid id = new Uuid(1L, next++);
                ids.put(topic.getKey(), id);
                names.put(id, topic.getKey());
                counts.put(id, topic.getValue());
            }
            Map<String, Map<Uuid, Set<Integer>>> current = new HashMap<>();
            Map<Uuid, Map<Integer, String>> owners = new HashMap<>();
            for (Owned o : owned) {
                Uuid id = ids.get(o.partition().topic());
                current.computeIfAbsent(o.member(), k -> new HashMap<>()).computeIfAbsent(id, k -> new HashSet<>())
                        .add(o.partition().partition());
                owners.computeIfAbsent(id, k -> new HashMap<>()).put(o.partition().partition(), o.member());
            }
            Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
            Set<Set<Uuid>> distinct = new HashSet<>();
            for (Member member : group.members) {
                Set<Uuid> subscribed = new HashSet<>();
                for (String topic : group.topicsOf(member)) {
                    if (ids.containsKey(topic)) {
                        subscribed.add(ids.get(topic));
                    }
                }
                distinct.add(subscribed);
                members.put(member.id(), new MemberSubscriptionAndAssignmentImpl(Optional.empty(),
                        Optional.ofNullable(member.instanceId()), subscribed,
                        new org.apache.kafka.coordinator.group.modern.Assignment(
                                current.getOrDefault(member.id(), Map.of()))));
            }
            SubscriptionType type = distinct.size() <= 1 ? SubscriptionType.HOMOGENEOUS
                    : SubscriptionType.HETEROGENEOUS;
            GroupSpecImpl spec = new GroupSpecImpl(members, type, owners);
            SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                @Override
                public int numPartitions(Uuid topicId) {
                    return counts.getOrDefault(topicId, -1);
                }

                @Override
                public Set<String> racksForPartition(Uuid topicId, int partition) {
                    return Set.of();
                }
            };
            return () -> {
                Map<String, List<TopicPartition>> result = new HashMap<>();
                for (Map.Entry<String, MemberAssignment> member : assignor.assign(spec, describer)
                        .members().entrySet()) {
                    List<TopicPartition> partitions = new ArrayList<>();
                    member.getValue().partitions().forEach((id, ps) -> ps.forEach(
                            p -> partitions.add(new TopicPartition(names.get(id), p))));
                    result.put(member.getKey(), partitions);
                }
                return result;
            };
        };
    }

    /** One assignment of every group: the inputs built first, then the timed calls. */
    static final class Call {
        final List<Supplier<Map<String, List<TopicPartition>>>> calls = new ArrayList<>();
        List<Map<String, List<TopicPartition>>> results;
        double seconds;

        Call(Peer peer, List<Group> groups, List<List<Owned>> owned) {
            for (int g = 0; g < groups.size(); g++) {
                calls.add(peer.prepare(groups.get(g), owned.get(g)));
            }
        }

        Call run() {
            results = new ArrayList<>(calls.size());
            long started = System.nanoTime();
            for (Supplier<Map<String, List<TopicPartition>>> call : calls) {
                results.add(call.get());
            }
            seconds = (System.nanoTime() - started) / 1e9;
            return this;
        }
    }

    static void write(Path out, List<Group> groups, Call call) throws IOException {
        try (BufferedWriter writer = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
            for (int g = 0; g < groups.size(); g++) {
                String group = groups.get(g).id;
                for (Map.Entry<String, List<TopicPartition>> member : call.results.get(g).entrySet()) {
                    for (TopicPartition p : member.getValue()) {
                        writer.write(group + "\t" + member.getKey() + "\t" + p.topic() + "\t" + p.partition() + "\n");
                    }
                }
            }
        }
    }

    static long peakResidentKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 5) {
            System.err.println("usage: AssignorHarness CASE_FILE ASSIGNOR WARMUP RUNS OUT_FILE|-");
            System.exit(2);
        }
        List<Group> groups = readCase(Path.of(args[0]));
        Peer peer = switch (args[1]) {
            case "uniform" -> server(new UniformAssignor());
            case "server-range" -> server(new org.apache.kafka.coordinator.group.assignor.RangeAssignor());
            default -> classic(args[1]);
        };
        int warmup = Integer.parseInt(args[2]);
        int runs = Integer.parseInt(args[3]);
        List<List<Owned>> given = new ArrayList<>();
        groups.forEach(g -> given.add(g.owned));

        Call first = new Call(peer, groups, given).run();
        double cold = first.seconds;
        if (!args[4].equals("-")) {
            write(Path.of(args[4]), groups, first);
        }
        first = null;
        for (int i = 0; i < warmup; i++) {
            new Call(peer, groups, given).run();
        }
        List<String> warm = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            warm.add(String.format("%.6f", new Call(peer, groups, given).run().seconds));
        }
        System.out.printf("{\"cold_s\": %.6f, \"warm_s\": [%s], \"peak_rss_mib\": %.1f}%n",
                cold, String.join(", ", warm), peakResidentKiB() / 1024.0);
    }
}
