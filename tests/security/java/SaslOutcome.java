// Kafka's Java admin client connecting once (tests/security/client_outcomes.py): prints "ok" when it listed the
// topics, else the simple name of the error's cause. Arguments: bootstrap, protocol, mechanism, user (empty: no
// SASL), CA file (PEM). The password comes on stdin, never on the command line.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;

public class SaslOutcome {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], protocol = args[1], mechanism = args[2], user = args[3], caFile = args[4];
        String password = new BufferedReader(new InputStreamReader(System.in)).readLine();
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("security.protocol", protocol);
        props.put("request.timeout.ms", "4000");
        props.put("default.api.timeout.ms", "6000");
        if (protocol.endsWith("SSL")) {
            props.put("ssl.truststore.type", "PEM");
            props.put("ssl.truststore.location", caFile);
        }
        if (!user.isEmpty()) {
            props.put("sasl.mechanism", mechanism);
            String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
            props.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
        }
        try (Admin admin = Admin.create(props)) {
            admin.listTopics().names().get(8, TimeUnit.SECONDS);
            System.out.println("ok");
        } catch (ExecutionException e) {
            System.out.println("java " + e.getCause().getClass().getSimpleName());
        } catch (java.util.concurrent.TimeoutException e) {
            System.out.println("java TimeoutException");
        }
    }
}
