import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.tools.GetOffsetShell;
import org.apache.kafka.tools.TopicCommand;

/**
 * Kafka's command-line tools (kafka-topics.sh is TopicCommand, kafka-get-offsets.sh is GetOffsetShell) in one JVM,
 * run one command at a time over JSON lines: each line on stdin is {"tool": "TopicCommand", "args": [...]}; each
 * answer on stdout is {"status": N, "out": "...", "err": "..."}: the tool's exit status and what it printed. The
 * tools end with Kafka's Exit.exit, whose procedure here only keeps the first status (an exception would be caught
 * by the tool's own catch-all, which reports any exception as status 1).
 */
public final class KafkaTools {
    private static final ObjectMapper JSON = new ObjectMapper();

    private KafkaTools() {
    }

    private static Integer exitStatus;

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        PrintStream stderr = System.err;
        Exit.setExitProcedure((status, message) -> {
            if (exitStatus == null) {
                exitStatus = status;
            }
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode request = JSON.readTree(line);
            String[] toolArgs = new String[request.get("args").size()];
            for (int i = 0; i < toolArgs.length; i++) {
                toolArgs[i] = request.get("args").get(i).asText();
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            exitStatus = null;
            int status;
            try {
                if (request.get("tool").asText().equals("TopicCommand")) {
                    TopicCommand.main(toolArgs);
                } else {
                    GetOffsetShell.main(toolArgs);
                }
                status = exitStatus == null ? 0 : exitStatus;
            } catch (Exception e) {
                status = -1;
                e.printStackTrace(System.err);
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(stderr);
                System.setErr(stderr);
            }
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("status", status);
            answer.put("out", out.toString(StandardCharsets.UTF_8));
            answer.put("err", err.toString(StandardCharsets.UTF_8));
            protocol.println(JSON.writeValueAsString(answer));
        }
    }
}
