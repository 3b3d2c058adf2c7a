import com.alibaba.fastjson.JSON;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

/**
 * The rocketspec client conformance driver for the Apache RocketMQ 4.9.8 Java client (driver contract v1).
 *
 * <pre>
 * javac -d CLASSES -cp 'ROCKETMQ_HOME/lib/*' RocketspecDriver.java
 * rocketspec conformance client --exec "java -cp CLASSES:ROCKETMQ_HOME/lib/* RocketspecDriver"
 * </pre>
 *
 * The environment (ROCKETSPEC_*) says which role to play: producer (DefaultMQProducer: sync, async or oneway),
 * transaction-producer (TransactionMQProducer) or consumer (DefaultMQPushConsumer, concurrent or orderly). Each event
 * is one JSON object on stdout; everything else (the client's own logs included) goes to stderr or to files under a
 * temporary directory. SIGTERM shuts the client down cleanly (offsets persisted, client unregistered) and exits 0.
 */
public final class RocketspecDriver {
    private static PrintStream out;
    private static volatile Runnable closer = () -> { };
    private static final AtomicBoolean STOPPING = new AtomicBoolean();
    // The client's logs and local offsets for this process only: removed when it ends.
    private static volatile Path home;

    private RocketspecDriver() {
    }

    public static void main(String[] argv) throws Exception {
        // The contract reserves stdout for events: the real stdout is kept here and System.out goes to stderr.
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        home = Files.createTempDirectory("rocketspec-java-driver-");
        setDefault("rocketmq.client.logRoot", home.resolve("logs").toString());
        setDefault("rocketmq.client.logLevel", "WARN");
        setDefault("rocketmq.client.logUseSlf4j", "false");
        setDefault("rocketmq.client.localOffsetStoreDir", home.resolve("offsets").toString());
        Runtime.getRuntime().addShutdownHook(new Thread(RocketspecDriver::shutdown, "rocketspec-shutdown"));
        String role = env("ROCKETSPEC_ROLE", "");
        try {
            switch (role) {
                case "producer":
                    producer();
                    break;
                case "transaction-producer":
                    transactionProducer();
                    break;
                case "consumer":
                    consumer();
                    break;
                default:
                    unsupported("unknown role " + role);
            }
        } catch (Throwable e) {
            e.printStackTrace();
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }
    }

    // ------------------------------------------------------------------------------------------------- the roles

    private static void producer() throws Exception {
        String mode = env("ROCKETSPEC_SEND_MODE", "sync");
        if (!List.of("sync", "async", "oneway").contains(mode)) {
            unsupported("unknown send mode " + mode);
        }
        DefaultMQProducer producer = new DefaultMQProducer(env("ROCKETSPEC_GROUP", "rocketspec_producer"));
        configure(producer);
        producer.start();
        closer = producer::shutdown;
        emit(event("started"));
        int count = Integer.parseInt(env("ROCKETSPEC_COUNT", "1"));
        for (int i = 0; i < count; i++) {
            Message message = message(i);
            final int index = i;
            try {
                if (mode.equals("sync")) {
                    emit(sent(index, producer.send(message)));
                } else if (mode.equals("oneway")) {
                    producer.sendOneway(message);
                    Map<String, Object> ok = event("send");
                    ok.put("index", index);
                    ok.put("ok", true);
                    emit(ok);
                } else {
                    CountDownLatch answered = new CountDownLatch(1);
                    producer.send(message, new SendCallback() {
                        @Override
                        public void onSuccess(SendResult result) {
                            emit(sent(index, result));
                            answered.countDown();
                        }

                        @Override
                        public void onException(Throwable e) {
                            emit(failed(index, e));
                            answered.countDown();
                        }
                    });
                    // One send at a time, so that the attempts of one message are not interleaved with the next.
                    if (!answered.await(producer.getSendMsgTimeout() + 10_000L, TimeUnit.MILLISECONDS)) {
                        emit(failed(index, new IllegalStateException("the async callback never ran")));
                    }
                }
            } catch (Exception e) {
                emit(failed(index, e));
            }
        }
        emit(event("done"));
        stopNow();
    }

    private static void transactionProducer() throws Exception {
        TransactionMQProducer producer = new TransactionMQProducer(env("ROCKETSPEC_GROUP", "rocketspec_tx"));
        configure(producer);
        final LocalTransactionState local = state(env("ROCKETSPEC_TX_LOCAL", "commit"));
        final LocalTransactionState check = state(env("ROCKETSPEC_TX_CHECK", "commit"));
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return local;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                Map<String, Object> checked = event("check");
                checked.put("msgId", msg.getMsgId());
                checked.put("transactionId", msg.getTransactionId());
                checked.put("answer", check.name());
                emit(checked);
                return check;
            }
        });
        producer.start();
        closer = producer::shutdown;
        emit(event("started"));
        int count = Integer.parseInt(env("ROCKETSPEC_COUNT", "1"));
        for (int i = 0; i < count; i++) {
            try {
                emit(sent(i, producer.sendMessageInTransaction(message(i), null)));
            } catch (Exception e) {
                emit(failed(i, e));
            }
        }
        emit(event("done"));
        // A transaction producer stays up until stopped: the broker's check-backs come to it afterwards.
        waitForever();
    }

    private static void consumer() throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(env("ROCKETSPEC_GROUP", "rocketspec_consumer"));
        consumer.setNamesrvAddr(env("ROCKETSPEC_NAMESRV", "127.0.0.1:9876"));
        consumer.setInstanceName(env("ROCKETSPEC_INSTANCE", "rocketspec-" + ProcessHandle.current().pid()));
        consumer.setVipChannelEnabled(false);
        consumer.setMqClientApiTimeout(Integer.parseInt(env("ROCKETSPEC_API_TIMEOUT_MS", "3000")));
        consumer.subscribe(env("ROCKETSPEC_TOPIC", "TopicTest"), env("ROCKETSPEC_SUBSCRIPTION", "*"));
        consumer.setMessageModel(MessageModel.valueOf(env("ROCKETSPEC_MESSAGE_MODEL", "CLUSTERING")));
        String from = env("ROCKETSPEC_CONSUME_FROM", "first");
        consumer.setConsumeFromWhere(from.equals("last") ? ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
            : ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        final String result = env("ROCKETSPEC_CONSUME_RESULT", "success");
        if (!List.of("success", "later", "later-once").contains(result)) {
            unsupported("unknown consume result " + result);
        }
        final int count = Integer.parseInt(env("ROCKETSPEC_COUNT", "0"));
        final AtomicInteger deliveries = new AtomicInteger();
        if (Boolean.parseBoolean(env("ROCKETSPEC_ORDERLY", "false"))) {
            consumer.registerMessageListener((MessageListenerOrderly) (messages, context) -> {
                boolean later = received(messages, context.getMessageQueue(), result, count, deliveries);
                return later ? ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT : ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                boolean later = received(messages, context.getMessageQueue(), result, count, deliveries);
                return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
        consumer.start();
        closer = consumer::shutdown;
        emit(event("started"));
        waitForever();
    }

    /** Reports each delivery; whether the listener answers "later" for this batch. */
    private static boolean received(List<MessageExt> messages, MessageQueue queue, String result, int count,
                                    AtomicInteger deliveries) {
        boolean later = result.equals("later");
        for (MessageExt m : messages) {
            Map<String, Object> got = event("received");
            got.put("msgId", m.getMsgId());
            got.put("topic", m.getTopic());
            got.put("broker", queue.getBrokerName());
            got.put("queueId", m.getQueueId());
            got.put("queueOffset", m.getQueueOffset());
            got.put("reconsumeTimes", m.getReconsumeTimes());
            got.put("body", new String(m.getBody(), StandardCharsets.UTF_8));
            emit(got);
            if (result.equals("later-once") && m.getReconsumeTimes() == 0) {
                later = true;
            }
            if (deliveries.incrementAndGet() == count) {
                emit(event("done"));
            }
        }
        return later;
    }

    // ------------------------------------------------------------------------------------------------- helpers

    private static void configure(DefaultMQProducer producer) {
        producer.setNamesrvAddr(env("ROCKETSPEC_NAMESRV", "127.0.0.1:9876"));
        producer.setInstanceName(env("ROCKETSPEC_INSTANCE", "rocketspec-" + ProcessHandle.current().pid()));
        producer.setVipChannelEnabled(false);
        producer.setMqClientApiTimeout(Integer.parseInt(env("ROCKETSPEC_API_TIMEOUT_MS", "3000")));
        producer.setSendMsgTimeout(Integer.parseInt(env("ROCKETSPEC_SEND_TIMEOUT_MS", "3000")));
        int retries = Integer.parseInt(env("ROCKETSPEC_RETRIES", "2"));
        producer.setRetryTimesWhenSendFailed(retries);
        producer.setRetryTimesWhenSendAsyncFailed(retries);
        producer.setSendLatencyFaultEnable(Boolean.parseBoolean(env("ROCKETSPEC_LATENCY_FAULT", "false")));
    }

    private static Message message(int index) {
        String tags = System.getenv("ROCKETSPEC_TAGS");
        Message message = new Message(env("ROCKETSPEC_TOPIC", "TopicTest"),
            ("rocketspec message " + index).getBytes(StandardCharsets.UTF_8));
        if (tags != null && !tags.isEmpty()) {
            message.setTags(tags);
        }
        return message;
    }

    private static LocalTransactionState state(String name) {
        switch (name) {
            case "commit":
                return LocalTransactionState.COMMIT_MESSAGE;
            case "rollback":
                return LocalTransactionState.ROLLBACK_MESSAGE;
            case "unknown":
                return LocalTransactionState.UNKNOW;
            default:
                unsupported("unknown transaction answer " + name);
                return null;
        }
    }

    private static Map<String, Object> sent(int index, SendResult result) {
        Map<String, Object> ok = event("send");
        ok.put("index", index);
        ok.put("ok", true);
        ok.put("status", result.getSendStatus().name());
        ok.put("msgId", result.getMsgId());
        MessageQueue queue = result.getMessageQueue();
        if (queue != null) {
            ok.put("broker", queue.getBrokerName());
            ok.put("queueId", queue.getQueueId());
        }
        ok.put("queueOffset", result.getQueueOffset());
        return ok;
    }

    private static Map<String, Object> failed(int index, Throwable error) {
        Map<String, Object> bad = event("send");
        bad.put("index", index);
        bad.put("ok", false);
        bad.put("error", (error.getClass().getSimpleName() + ": " + error.getMessage()).replaceAll("\\s+", " "));
        return bad;
    }

    private static Map<String, Object> event(String name) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", name);
        return e;
    }

    private static void emit(Map<String, Object> event) {
        synchronized (RocketspecDriver.class) {
            out.println(JSON.toJSONString(event));
            out.flush();
        }
    }

    private static void unsupported(String reason) {
        Map<String, Object> e = event("unsupported");
        e.put("reason", reason);
        emit(e);
        Runtime.getRuntime().halt(3);
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    private static void setDefault(String property, String value) {
        if (System.getProperty(property) == null) {
            System.setProperty(property, value);
        }
    }

    private static void waitForever() throws InterruptedException {
        new CountDownLatch(1).await();
    }

    /** Shut the client down (once) and exit 0: on SIGTERM through the shutdown hook, or when a producer is done. */
    private static void shutdown() {
        if (!STOPPING.compareAndSet(false, true)) {
            // Already shutting down (a producer that finished, then SIGTERM): the first caller halts with 0.
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return;
        }
        try {
            closer.run();
        } catch (RuntimeException e) {
            e.printStackTrace();
        }
        System.err.flush();
        out.flush();
        deleteTree(home);
        Runtime.getRuntime().halt(0);
    }

    /** Best effort: a file the client still writes to may be removed under it (it is closing). */
    private static void deleteTree(Path root) {
        if (root == null) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException e) {
                    // left behind in the temporary directory
                }
            });
        } catch (IOException | UncheckedIOException e) {
            // left behind in the temporary directory
        }
    }

    private static void stopNow() {
        shutdown();
    }
}
