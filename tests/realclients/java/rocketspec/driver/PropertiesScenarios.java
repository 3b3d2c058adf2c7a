package rocketspec.driver;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * What a consumer receives on every path a message can take through the broker: plain, delayed, retried, dead-lettered,
 * transactional (committed at once and after a check-back, whose half message the producer's check sees too) and
 * batched. Every scenario dumps each delivery with
 * {@link Ctx#message} (all fields and properties), so a comparison shows any property the broker adds, keeps or drops
 * differently.
 */
public final class PropertiesScenarios {
    private PropertiesScenarios() {
    }

    static DefaultMQProducer producer(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer(ctx.name("PPG"));
        producer.start();
        ctx.onClose(producer::shutdown);
        return producer;
    }

    /** A message with tags, keys and a user property, so every kind of property is on it. */
    static Message message(String topic, String body) {
        Message msg = new Message(topic, "TagP", "key-" + body + " second-key", Ctx.bytes(body));
        msg.putUserProperty("color", "red");
        return msg;
    }

    /** A push consumer of TOPIC from the first offset; LISTENER decides each delivery's status. */
    static DefaultMQPushConsumer consumer(Ctx ctx, String group, String topic, int maxReconsumeTimes,
                                          MessageListenerConcurrently listener) throws Exception {
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.subscribe(topic, "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeMessageBatchMaxSize(1);
        if (maxReconsumeTimes >= 0) {
            consumer.setMaxReconsumeTimes(maxReconsumeTimes);
        }
        consumer.registerMessageListener(listener);
        consumer.start();
        ctx.onClose(consumer::shutdown);
        return consumer;
    }

    /** Deliveries recorded in arrival order (as Ctx.message maps, plus the delivery's reconsume count). */
    static List<Map<String, Object>> recorder() {
        return Collections.synchronizedList(new ArrayList<>());
    }

    static List<Map<String, Object>> snapshot(List<Map<String, Object>> seen) {
        synchronized (seen) {
            return new ArrayList<>(seen);
        }
    }

    static List<Map<String, Object>> consumeOk(Ctx ctx, String topic, int expected) throws Exception {
        List<Map<String, Object>> seen = recorder();
        consumer(ctx, ctx.name("PCG"), topic, -1, (msgs, context) -> {
            for (MessageExt m : msgs) {
                seen.add(Ctx.message(m));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        Ctx.await(() -> seen.size() >= expected, 30000);
        Thread.sleep(300);
        List<Map<String, Object>> out = snapshot(seen);
        out.sort(Comparator.comparing(m -> String.valueOf(m.get("body"))));
        return out;
    }

    /** One message, consumed once. */
    public static Map<String, Object> plain(Ctx ctx) throws Exception {
        String topic = ctx.name("JPropPlain");
        ctx.createTopic(topic, 1);
        producer(ctx).send(message(topic, "plain"));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("received", consumeOk(ctx, topic, 1));
        return out;
    }

    /** A body over compressMsgBodyOverHowmuch (4 KiB): stored compressed (sysFlag bit 0), delivered inflated. */
    public static Map<String, Object> compressed(Ctx ctx) throws Exception {
        String topic = ctx.name("JPropZip");
        ctx.createTopic(topic, 1);
        StringBuilder body = new StringBuilder("compressed-");
        while (body.length() < 6000) {
            body.append("0123456789abcdef");
        }
        Message msg = message(topic, "compressed");
        msg.setBody(Ctx.bytes(body.toString()));
        producer(ctx).send(msg);
        List<Map<String, Object>> received = consumeOk(ctx, topic, 1);
        for (Map<String, Object> m : received) {
            m.put("body", "<" + String.valueOf(m.get("body")).length() + " chars>");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("received", received);
        return out;
    }

    /** A message with delay level 2: parked in SCHEDULE_TOPIC_XXXX, then delivered to its topic. */
    public static Map<String, Object> delayed(Ctx ctx) throws Exception {
        String topic = ctx.name("JPropDelay");
        ctx.createTopic(topic, 1);
        Message msg = message(topic, "delayed");
        msg.setDelayTimeLevel(2);
        producer(ctx).send(msg);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("received", consumeOk(ctx, topic, 1));
        return out;
    }

    /** A batch of two messages, consumed one by one. */
    public static Map<String, Object> batch(Ctx ctx) throws Exception {
        String topic = ctx.name("JPropBatch");
        ctx.createTopic(topic, 1);
        List<Message> batch = new ArrayList<>();
        batch.add(message(topic, "batch-0"));
        batch.add(message(topic, "batch-1"));
        producer(ctx).send(batch);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("received", consumeOk(ctx, topic, 2));
        return out;
    }

    /**
     * Make sure %RETRY%GROUP exists and is routed before the consumer under test starts: a consumer learns the retry
     * topic's route at start, else only at its next route poll (30 s) and rebalance (20 s), on either target.
     */
    static void ensureRetryTopic(Ctx ctx, String group, String topic) throws Exception {
        DefaultMQPushConsumer warmUp = ctx.pushConsumer(group);
        warmUp.subscribe(topic, "no-such-tag");
        warmUp.registerMessageListener((MessageListenerConcurrently) (msgs, context) ->
            ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        warmUp.start();
        try {
            if (routeVisibleAfter(ctx, "%RETRY%" + group, System.currentTimeMillis(), 20000) < 0) {
                throw new IllegalStateException("no route of %RETRY%" + group);
            }
        } finally {
            warmUp.shutdown();
        }
    }

    /** The listener fails the first delivery: the message comes back from %RETRY%group. */
    public static Map<String, Object> retried(Ctx ctx) throws Exception {
        String topic = ctx.name("JPropRetry");
        String group = ctx.name("PCG");
        ctx.createTopic(topic, 1);
        ensureRetryTopic(ctx, group, topic);
        producer(ctx).send(message(topic, "retried"));
        List<Map<String, Object>> seen = recorder();
        AtomicInteger deliveries = new AtomicInteger();
        consumer(ctx, group, topic, -1, (msgs, context) -> {
            for (MessageExt m : msgs) {
                seen.add(Ctx.message(m));
            }
            return deliveries.getAndIncrement() == 0
                ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        Ctx.await(() -> seen.size() >= 2, 60000);
        Thread.sleep(300);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("received", snapshot(seen));
        return out;
    }

    /**
     * maxReconsumeTimes 1: the first delivery fails, the retry fails, and the message goes to %DLQ%group, where a
     * consumer of the dead-letter topic gets it.
     */
    public static Map<String, Object> deadLetter(Ctx ctx) throws Exception {
        String topic = ctx.name("JPropDlq");
        String group = ctx.name("PCG");
        ctx.createTopic(topic, 1);
        ensureRetryTopic(ctx, group, topic);
        producer(ctx).send(message(topic, "dead"));
        List<Map<String, Object>> failed = recorder();
        consumer(ctx, group, topic, 1, (msgs, context) -> {
            for (MessageExt m : msgs) {
                failed.add(Ctx.message(m));
            }
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        Ctx.await(() -> failed.size() >= 2, 60000);
        List<Map<String, Object>> dead = recorder();
        consumer(ctx, ctx.name("PDLQ"), "%DLQ%" + group, -1, (msgs, context) -> {
            for (MessageExt m : msgs) {
                dead.add(Ctx.message(m));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        Ctx.await(() -> dead.size() >= 1, 60000);
        Thread.sleep(300);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("failed", snapshot(failed));
        out.put("deadLetter", snapshot(dead));
        return out;
    }

    /**
     * Two transactional messages: one committed by the local transaction, one left UNKNOW and committed when the
     * broker checks back.
     */
    public static Map<String, Object> transactional(Ctx ctx) throws Exception {
        String topic = ctx.name("JPropTxn");
        ctx.createTopic(topic, 1);
        AtomicInteger checks = new AtomicInteger();
        AtomicReference<Map<String, Object>> checked = new AtomicReference<>();
        TransactionMQProducer producer = ctx.transactionProducer(ctx.name("PTG"));
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return "txn-now".equals(new String(msg.getBody(), java.nio.charset.StandardCharsets.UTF_8))
                    ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                if (checks.incrementAndGet() == 1) {
                    checked.set(Ctx.message(msg));
                }
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        producer.start();
        ctx.onClose(producer::shutdown);
        producer.sendMessageInTransaction(message(topic, "txn-now"), null);
        producer.sendMessageInTransaction(message(topic, "txn-checked"), null);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("received", consumeOk(ctx, topic, 2));
        out.put("checked", checks.get() > 0);
        out.put("checkBackMessage", checked.get());
        return out;
    }

    /** Milliseconds until the name server routes TOPIC (-1: not within TIMEOUT_MS). */
    static long routeVisibleAfter(Ctx ctx, String topic, long since, long timeoutMs) throws Exception {
        boolean seen = Ctx.await(() -> {
            try {
                return !ctx.admin().examineTopicRouteInfo(topic).getQueueDatas().isEmpty();
            } catch (Exception e) {
                return false;
            }
        }, timeoutMs);
        return seen ? System.currentTimeMillis() - since : -1;
    }

    /**
     * Topics the broker creates itself are routed by the name server at once (the broker registers right after
     * creating them): a topic auto-created by a send, %RETRY%group created by a consumer's heartbeat, %DLQ%group
     * created by a send-back. Reports whether each route appeared within WITHIN_MS.
     */
    public static Map<String, Object> brokerCreatedRoutes(Ctx ctx) throws Exception {
        long within = ctx.num("withinMs", 5000);
        ctx.admin();
        Map<String, Object> out = new LinkedHashMap<>();
        String autoTopic = ctx.name("JAuto");
        DefaultMQProducer producer = producer(ctx);
        long sent = System.currentTimeMillis();
        producer.send(message(autoTopic, "auto"));
        long auto = routeVisibleAfter(ctx, autoTopic, sent, 40000);
        out.put("autoCreatedRouted", auto >= 0 && auto <= within);

        String group = ctx.name("PRG");
        long started = System.currentTimeMillis();
        consumer(ctx, group, autoTopic, 0, (msgs, context) -> ConsumeConcurrentlyStatus.RECONSUME_LATER);
        long retry = routeVisibleAfter(ctx, "%RETRY%" + group, started, 40000);
        out.put("retryRouted", retry >= 0 && retry <= within);
        long dlq = routeVisibleAfter(ctx, "%DLQ%" + group, System.currentTimeMillis(), 60000);
        out.put("dlqRouted", dlq >= 0);
        out.put("ms", auto + "/" + retry + "/" + dlq);
        return out;
    }
}
