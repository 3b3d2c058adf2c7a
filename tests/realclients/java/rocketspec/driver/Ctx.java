package rocketspec.driver;

import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** What a scenario gets: the name server, its arguments, and started clients that are shut down at the end. */
public final class Ctx {
    public final String namesrv;
    public final JSONObject args;
    private final List<Runnable> closers = new ArrayList<>();
    private DefaultMQAdminExt admin;

    Ctx(String namesrv, JSONObject args) {
        this.namesrv = namesrv;
        this.args = args;
    }

    public String str(String key) {
        String value = args.getString(key);
        if (value == null) {
            throw new IllegalArgumentException("missing argument " + key);
        }
        return value;
    }

    public String str(String key, String fallback) {
        String value = args.getString(key);
        return value == null ? fallback : value;
    }

    public int num(String key, int fallback) {
        Integer value = args.getInteger(key);
        return value == null ? fallback : value;
    }

    public boolean flag(String key) {
        Boolean value = args.getBoolean(key);
        return value != null && value;
    }

    /** A name unique to this run: PREFIX + the run's suffix argument. */
    public String name(String prefix) {
        return prefix + str("suffix", "");
    }

    public DefaultMQAdminExt admin() throws MQClientException {
        if (admin == null) {
            admin = new DefaultMQAdminExt(5000);
            admin.setNamesrvAddr(namesrv);
            admin.setInstanceName("admin-" + System.nanoTime());
            admin.start();
            final DefaultMQAdminExt started = admin;
            closers.add(started::shutdown);
        }
        return admin;
    }

    public DefaultMQProducer producer(String group) throws MQClientException {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("p-" + System.nanoTime());
        return producer;
    }

    public TransactionMQProducer transactionProducer(String group) {
        TransactionMQProducer producer = new TransactionMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("t-" + System.nanoTime());
        return producer;
    }

    public DefaultMQPushConsumer pushConsumer(String group) {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("c-" + System.nanoTime());
        consumer.setPullInterval(0);
        return consumer;
    }

    public DefaultLitePullConsumer litePullConsumer(String group) {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("l-" + System.nanoTime());
        return consumer;
    }

    @SuppressWarnings("deprecation")
    public DefaultMQPullConsumer pullConsumer(String group) {
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("q-" + System.nanoTime());
        return consumer;
    }

    /** Shut this client down when the scenario ends (in reverse order of registration). */
    public void onClose(Runnable closer) {
        closers.add(closer);
    }

    void close() {
        for (int i = closers.size() - 1; i >= 0; i--) {
            try {
                closers.get(i).run();
            } catch (RuntimeException ignored) {
                // Shutting down is best effort: the JVM halts next.
            }
        }
    }

    /** Every master broker address of every cluster the name server knows, by broker name. */
    public Map<String, String> masters() throws Exception {
        ClusterInfo info = admin().examineBrokerClusterInfo();
        Map<String, String> out = new TreeMap<>();
        for (BrokerData data : info.getBrokerAddrTable().values()) {
            String addr = data.getBrokerAddrs().get(0L);
            if (addr != null) {
                out.put(data.getBrokerName(), addr);
            }
        }
        return out;
    }

    /** Create TOPIC with QUEUES read and write queues on every master (as mqadmin updateTopic -c does) and wait
     * until the name server routes it to all of them. */
    public void createTopic(String topic, int queues) throws Exception {
        Map<String, String> masters = masters();
        for (String addr : masters.values()) {
            TopicConfig config = new TopicConfig(topic, queues, queues, 6);
            admin().createAndUpdateTopicConfig(addr, config);
        }
        awaitTrue(() -> {
            try {
                TopicRouteData route = admin().examineTopicRouteInfo(topic);
                return route.getQueueDatas().size() == masters.size();
            } catch (Exception e) {
                return false;
            }
        }, 15000, "route of " + topic);
    }

    public static void awaitTrue(BooleanSupplier condition, long timeoutMs, String what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    /** Wait until CONDITION holds, at most TIMEOUT_MS; whether it did. */
    public static boolean await(BooleanSupplier condition, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    public static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** What a consumer sees of a message: every field a test compares, properties as delivered. */
    public static Map<String, Object> message(MessageExt msg) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("topic", msg.getTopic());
        out.put("body", new String(msg.getBody(), StandardCharsets.UTF_8));
        out.put("tags", msg.getTags());
        out.put("keys", msg.getKeys());
        out.put("queueId", msg.getQueueId());
        out.put("queueOffset", msg.getQueueOffset());
        out.put("reconsumeTimes", msg.getReconsumeTimes());
        out.put("flag", msg.getFlag());
        out.put("sysFlag", msg.getSysFlag());
        out.put("msgId", msg.getMsgId());
        out.put("offsetMsgId", msg instanceof org.apache.rocketmq.common.message.MessageClientExt
            ? ((org.apache.rocketmq.common.message.MessageClientExt) msg).getOffsetMsgId() : null);
        out.put("bornHost", String.valueOf(msg.getBornHost()));
        out.put("storeHost", String.valueOf(msg.getStoreHost()));
        out.put("bornTimestamp", msg.getBornTimestamp());
        out.put("storeTimestamp", msg.getStoreTimestamp());
        out.put("commitLogOffset", msg.getCommitLogOffset());
        out.put("storeSize", msg.getStoreSize());
        out.put("bodyCRC", msg.getBodyCRC());
        out.put("properties", new TreeMap<>(msg.getProperties()));
        return out;
    }

    public static Map<String, Object> sendResult(SendResult result) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("status", String.valueOf(result.getSendStatus()));
        out.put("topic", result.getMessageQueue().getTopic());
        out.put("broker", result.getMessageQueue().getBrokerName());
        out.put("queueId", result.getMessageQueue().getQueueId());
        out.put("queueOffset", result.getQueueOffset());
        out.put("msgId", result.getMsgId());
        out.put("offsetMsgId", result.getOffsetMsgId());
        out.put("regionId", result.getRegionId());
        out.put("traceOn", result.isTraceOn());
        out.put("transactionId", result.getTransactionId());
        return out;
    }

    /** A Java exception as a client sees it: class and, for MQ exceptions, the response code. */
    public static Map<String, Object> error(Throwable e) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("exception", e.getClass().getSimpleName());
        if (e instanceof MQClientException) {
            out.put("code", ((MQClientException) e).getResponseCode());
        } else if (e instanceof org.apache.rocketmq.client.exception.MQBrokerException) {
            out.put("code", ((org.apache.rocketmq.client.exception.MQBrokerException) e).getResponseCode());
        }
        String message = String.valueOf(e.getMessage());
        int cut = message.indexOf("\nSee ");
        out.put("message", cut >= 0 ? message.substring(0, cut) : message);
        return out;
    }
}
