package rocketspec.driver;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

/** Consumers: push (clustering, broadcasting, tags, retry, DLQ, delay levels), pull and lite pull. */
public final class ConsumerScenarios {
    private ConsumerScenarios() {
    }

    static String body(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    static void send(Ctx ctx, DefaultMQProducer producer, String topic, String tags, int count, String prefix)
        throws Exception {
        for (int i = 0; i < count; i++) {
            producer.send(new Message(topic, tags, Ctx.bytes(prefix + i)));
        }
    }

    static DefaultMQPushConsumer push(Ctx ctx, String group, String topic, String expression, MessageModel model,
        MessageListenerConcurrently listener) throws Exception {
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.subscribe(topic, expression);
        consumer.setMessageModel(model);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.registerMessageListener(listener);
        consumer.start();
        ctx.onClose(consumer::shutdown);
        return consumer;
    }

    static MessageListenerConcurrently recorder(Collection<String> into) {
        return (msgs, context) -> {
            for (MessageExt m : msgs) {
                into.add(body(m));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    static List<String> sorted(Collection<String> bodies) {
        List<String> out;
        synchronized (bodies) {
            out = new ArrayList<>(bodies);
        }
        Collections.sort(out);
        return out;
    }

    /** Two clustering consumers of one group share the queues: together each message once. Then tags. */
    public static Map<String, Object> clustering(Ctx ctx) throws Exception {
        String topic = ctx.name("JClu");
        ctx.createTopic(topic, 4);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        String group = ctx.name("CG");
        List<String> first = Collections.synchronizedList(new ArrayList<>());
        List<String> second = Collections.synchronizedList(new ArrayList<>());
        push(ctx, group, topic, "*", MessageModel.CLUSTERING, recorder(first));
        push(ctx, group, topic, "*", MessageModel.CLUSTERING, recorder(second));
        // Both consumers must see each other (rebalance) before the messages are sent.
        Ctx.awaitTrue(() -> {
            try {
                return ctx.admin().examineConsumerConnectionInfo(group).getConnectionSet().size() == 2;
            } catch (Exception e) {
                return false;
            }
        }, 20000, "two consumers");
        Thread.sleep(ctx.num("settleMs", 3000));
        send(ctx, producer, topic, "A", 40, "m");
        Ctx.await(() -> first.size() + second.size() >= 40, 30000);
        Thread.sleep(500);
        List<String> all = new ArrayList<>(sorted(first));
        all.addAll(sorted(second));
        Collections.sort(all);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("total", all.size());
        out.put("distinct", new TreeSet<>(all).size());
        out.put("bothGotSome", !first.isEmpty() && !second.isEmpty());
        return out;
    }

    /** Broadcasting: each consumer of the group gets every message. */
    public static Map<String, Object> broadcasting(Ctx ctx) throws Exception {
        String topic = ctx.name("JBro");
        ctx.createTopic(topic, 4);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        String group = ctx.name("CG");
        List<String> first = Collections.synchronizedList(new ArrayList<>());
        List<String> second = Collections.synchronizedList(new ArrayList<>());
        push(ctx, group, topic, "*", MessageModel.BROADCASTING, recorder(first));
        push(ctx, group, topic, "*", MessageModel.BROADCASTING, recorder(second));
        Thread.sleep(1000);
        send(ctx, producer, topic, "A", 12, "b");
        Ctx.await(() -> first.size() >= 12 && second.size() >= 12, 30000);
        Thread.sleep(500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("first", sorted(first));
        out.put("second", sorted(second));
        return out;
    }

    /** Tag filtering: "TagA || TagC" gets those two tags only; "*" gets all. */
    public static Map<String, Object> tags(Ctx ctx) throws Exception {
        String topic = ctx.name("JTag");
        ctx.createTopic(topic, 2);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        for (String tag : new String[] {"TagA", "TagB", "TagC", ""}) {
            send(ctx, producer, topic, tag, 3, (tag.isEmpty() ? "none" : tag) + "-");
        }
        List<String> some = Collections.synchronizedList(new ArrayList<>());
        List<String> all = Collections.synchronizedList(new ArrayList<>());
        push(ctx, ctx.name("CGA"), topic, "TagA || TagC", MessageModel.CLUSTERING, recorder(some));
        push(ctx, ctx.name("CGB"), topic, "*", MessageModel.CLUSTERING, recorder(all));
        Ctx.await(() -> some.size() >= 6 && all.size() >= 12, 30000);
        Thread.sleep(1500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("some", sorted(some));
        out.put("all", sorted(all));
        return out;
    }

    /** RECONSUME_LATER once: the message comes back from %RETRY% (1 s delay levels) with reconsumeTimes 1. */
    public static Map<String, Object> retry(Ctx ctx) throws Exception {
        String topic = ctx.name("JRetry");
        ctx.createTopic(topic, 2);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        Map<String, List<Integer>> times = new ConcurrentHashMap<>();
        Map<String, Long> firstSeen = new ConcurrentHashMap<>();
        Map<String, Long> backAfter = new ConcurrentHashMap<>();
        Map<String, String> retriedTopic = new ConcurrentHashMap<>();
        push(ctx, ctx.name("CG"), topic, "*", MessageModel.CLUSTERING, (msgs, context) -> {
            MessageExt m = msgs.get(0);
            String b = body(m);
            times.computeIfAbsent(b, k -> Collections.synchronizedList(new ArrayList<>())).add(m.getReconsumeTimes());
            long now = System.currentTimeMillis();
            if (m.getReconsumeTimes() == 0) {
                firstSeen.put(b, now);
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            backAfter.put(b, now - firstSeen.getOrDefault(b, now));
            retriedTopic.put(b, m.getTopic());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        send(ctx, producer, topic, "A", 3, "r");
        // The client learns the %RETRY% route only at its next route poll (30 s) on either target: be patient.
        Ctx.await(() -> backAfter.size() >= 3, 75000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("reconsumeTimes", new TreeMap<>(times));
        out.put("topics", new TreeMap<>(retriedTopic));
        long slowest = 0;
        for (long ms : backAfter.values()) {
            slowest = Math.max(slowest, ms);
        }
        out.put("slowestBackMs", slowest);
        out.put("backAfterAtLeast900ms", backAfter.size() == 3 && Collections.min(backAfter.values()) >= 900);
        return out;
    }

    /**
     * Traffic for the wire tap (tests/test_tap_real.py): {@code count} messages (default 12) to a two-queue topic,
     * a push consumer that fails every third message once (RECONSUME_LATER: the client sends it back, then its
     * offset passes it) and succeeds otherwise; it runs until each message was handled once and one scheduled
     * offset persist (every 5 s) has gone out, then shuts down (which persists the offsets again).
     */
    public static Map<String, Object> tapped(Ctx ctx) throws Exception {
        String topic = ctx.name("JTap");
        ctx.createTopic(topic, 2);
        int count = ctx.num("count", 12);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        Set<String> handled = ConcurrentHashMap.newKeySet();
        AtomicInteger failed = new AtomicInteger();
        push(ctx, ctx.name("CG"), topic, "*", MessageModel.CLUSTERING, (msgs, context) -> {
            MessageExt m = msgs.get(0);
            String b = body(m);
            handled.add(b);
            if (m.getReconsumeTimes() == 0 && Integer.parseInt(b.substring(1)) % 3 == 0) {
                failed.incrementAndGet();
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        send(ctx, producer, topic, "A", count, "t");
        Ctx.await(() -> handled.size() >= count, 30000);
        Thread.sleep(6000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("handled", handled.size());
        out.put("failedOnce", failed.get());
        return out;
    }

    /** maxReconsumeTimes 2 and a listener that always fails: 3 deliveries, then the DLQ, which is write-only. */
    public static Map<String, Object> deadLetter(Ctx ctx) throws Exception {
        String topic = ctx.name("JDlq");
        ctx.createTopic(topic, 1);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        String group = ctx.name("CG");
        List<Integer> deliveries = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.subscribe(topic, "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setMaxReconsumeTimes(2);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            deliveries.add(msgs.get(0).getReconsumeTimes());
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        consumer.start();
        ctx.onClose(consumer::shutdown);
        send(ctx, producer, topic, "A", 1, "poison");
        String dlq = "%DLQ%" + group;
        boolean routed = Ctx.await(() -> {
            try {
                return ctx.admin().examineTopicRouteInfo(dlq) != null && deliveries.size() >= 3;
            } catch (Exception e) {
                return false;
            }
        }, 75000);
        Thread.sleep(2500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("deliveries", sorted(toStrings(deliveries)));
        out.put("dlqRouted", routed);
        org.apache.rocketmq.common.protocol.route.TopicRouteData route = ctx.admin().examineTopicRouteInfo(dlq);
        out.put("dlqPerm", route.getQueueDatas().get(0).getPerm());
        out.put("dlqQueues", route.getQueueDatas().get(0).getWriteQueueNums());
        DefaultMQPullConsumer puller = ctx.pullConsumer(ctx.name("PULLDLQ"));
        puller.start();
        ctx.onClose(puller::shutdown);
        MessageQueue mq = new MessageQueue(dlq, route.getQueueDatas().get(0).getBrokerName(), 0);
        out.put("dlqMaxOffset", puller.maxOffset(mq));
        try {
            PullResult pulled = puller.pull(mq, "*", 0, 32, 3000);
            out.put("dlqPull", String.valueOf(pulled.getPullStatus()));
        } catch (Exception e) {
            out.put("dlqPull", Ctx.error(e));
        }
        return out;
    }

    static List<String> toStrings(List<Integer> values) {
        List<String> out = new ArrayList<>();
        synchronized (values) {
            for (Integer v : values) {
                out.add(String.valueOf(v));
            }
        }
        return out;
    }

    /** A message with delay level 2 (1 s here) is delivered no earlier than that. */
    public static Map<String, Object> delayed(Ctx ctx) throws Exception {
        String topic = ctx.name("JDelay");
        ctx.createTopic(topic, 1);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        Map<String, Long> arrived = new ConcurrentHashMap<>();
        push(ctx, ctx.name("CG"), topic, "*", MessageModel.CLUSTERING, (msgs, context) -> {
            for (MessageExt m : msgs) {
                arrived.put(body(m), System.currentTimeMillis());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        Thread.sleep(1500);
        Message msg = new Message(topic, "D", Ctx.bytes("later"));
        msg.setDelayTimeLevel(2);
        long sent = System.currentTimeMillis();
        String status = String.valueOf(producer.send(msg).getSendStatus());
        Message now = new Message(topic, "D", Ctx.bytes("now"));
        producer.send(now);
        Ctx.await(() -> arrived.size() >= 2, 20000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("status", status);
        out.put("received", new TreeSet<>(arrived.keySet()));
        Long later = arrived.get("later");
        out.put("delayedAtLeast900ms", later != null && later - sent >= 900);
        out.put("delayedUnder10s", later != null && later - sent < 10000);
        Message bad = new Message(topic, "D", Ctx.bytes("level-99"));
        bad.setDelayTimeLevel(99);
        out.put("level99", String.valueOf(producer.send(bad).getSendStatus()));
        return out;
    }

    /** DefaultMQPullConsumer: queues, offsets, pull statuses (FOUND, NO_NEW_MSG, OFFSET_ILLEGAL), stored offsets. */
    @SuppressWarnings("deprecation")
    public static Map<String, Object> pull(Ctx ctx) throws Exception {
        String topic = ctx.name("JPull");
        ctx.createTopic(topic, 2);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        MessageQueue target = null;
        for (int i = 0; i < 5; i++) {
            target = producer.send(new Message(topic, i % 2 == 0 ? "even" : "odd", Ctx.bytes("p" + i)),
                (mqs, m, arg) -> mqs.get(0), null).getMessageQueue();
        }
        DefaultMQPullConsumer consumer = ctx.pullConsumer(ctx.name("CG"));
        consumer.start();
        ctx.onClose(consumer::shutdown);
        Map<String, Object> out = new LinkedHashMap<>();
        Set<MessageQueue> mqs = consumer.fetchSubscribeMessageQueues(topic);
        out.put("queues", mqs.size());
        out.put("min", consumer.minOffset(target));
        out.put("max", consumer.maxOffset(target));
        PullResult all = consumer.pull(target, "*", 0, 32);
        out.put("all", describe(all));
        PullResult even = consumer.pull(target, "even", 0, 32);
        out.put("even", describe(even));
        out.put("fromTwo", describe(consumer.pull(target, "*", 2, 2)));
        out.put("atMax", describe(consumer.pull(target, "*", 5, 32)));
        out.put("pastMax", describe(consumer.pull(target, "*", 50, 32)));
        consumer.updateConsumeOffset(target, 3);
        consumer.getOffsetStore().persist(target);
        Thread.sleep(200);
        out.put("stored", consumer.fetchConsumeOffset(target, true));
        out.put("searchFuture", consumer.searchOffset(target, System.currentTimeMillis() + 3600_000L));
        out.put("searchPast", consumer.searchOffset(target, 0));
        try {
            consumer.pull(new MessageQueue(topic + "Nope", target.getBrokerName(), 0), "*", 0, 32);
            out.put("unknownTopic", "pulled");
        } catch (Exception e) {
            out.put("unknownTopic", Ctx.error(e));
        }
        return out;
    }

    static Map<String, Object> describe(PullResult result) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("status", String.valueOf(result.getPullStatus()));
        out.put("next", result.getNextBeginOffset());
        out.put("min", result.getMinOffset());
        out.put("max", result.getMaxOffset());
        List<String> bodies = new ArrayList<>();
        if (result.getMsgFoundList() != null) {
            for (MessageExt m : result.getMsgFoundList()) {
                bodies.add(body(m) + "@" + m.getQueueOffset());
            }
        }
        out.put("bodies", bodies);
        return out;
    }

    /** DefaultLitePullConsumer, subscribe mode (rebalanced, auto commit) and assign mode with seek. */
    public static Map<String, Object> litePull(Ctx ctx) throws Exception {
        String topic = ctx.name("JLite");
        ctx.createTopic(topic, 2);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        send(ctx, producer, topic, "A", 10, "l");
        DefaultLitePullConsumer subscriber = ctx.litePullConsumer(ctx.name("CGS"));
        subscriber.subscribe(topic, "*");
        subscriber.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        subscriber.setPollTimeoutMillis(1000);
        subscriber.start();
        ctx.onClose(subscriber::shutdown);
        List<String> got = new ArrayList<>();
        for (int i = 0; i < 40 && got.size() < 10; i++) {
            for (MessageExt m : subscriber.poll()) {
                got.add(body(m));
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("subscribed", sorted(got));
        subscriber.commitSync();
        DefaultLitePullConsumer assigned = ctx.litePullConsumer(ctx.name("CGA"));
        assigned.setAutoCommit(false);
        assigned.setPollTimeoutMillis(1000);
        assigned.start();
        ctx.onClose(assigned::shutdown);
        List<MessageQueue> queues = new ArrayList<>(assigned.fetchMessageQueues(topic));
        queues.sort(null);
        assigned.assign(queues);
        // Read everything first: a seek while the assign-time pull tasks are still fetching races with them inside
        // the client (an in-flight pull can consume the seek), so the count after the seek would vary by run.
        int before = 0;
        for (int i = 0; i < 40 && before < 10; i++) {
            before += assigned.poll().size();
        }
        out.put("beforeSeekCount", before);
        for (MessageQueue mq : queues) {
            assigned.seek(mq, 1);
        }
        List<String> after = new ArrayList<>();
        for (int i = 0; i < 10 && after.size() < 6; i++) {
            for (MessageExt m : assigned.poll()) {
                after.add(body(m));
            }
        }
        out.put("afterSeekCount", after.size());
        Map<String, Long> committed = new TreeMap<>();
        for (MessageQueue mq : queues) {
            committed.put(mq.getBrokerName() + "/" + mq.getQueueId(), assigned.committed(mq));
        }
        out.put("committedUnassigned", new TreeSet<>(committed.values()));
        return out;
    }

    /** Nothing consumed yet: the new group's progress through the admin API (offsets per queue). */
    public static Map<String, Object> offsets(Ctx ctx) throws Exception {
        String topic = ctx.name("JOff");
        ctx.createTopic(topic, 2);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        send(ctx, producer, topic, "A", 6, "o");
        AtomicInteger got = new AtomicInteger();
        String group = ctx.name("CG");
        push(ctx, group, topic, "*", MessageModel.CLUSTERING, (msgs, context) -> {
            got.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        Ctx.await(() -> got.get() >= 6, 20000);
        // The push consumer commits every 5 s; wait for the broker to have all offsets.
        Map<String, Long> offsets = new TreeMap<>();
        Ctx.await(() -> {
            try {
                long sum = 0;
                for (org.apache.rocketmq.common.admin.OffsetWrapper w
                    : ctx.admin().examineConsumeStats(group).getOffsetTable().values()) {
                    sum += w.getConsumerOffset();
                }
                return sum == 6;
            } catch (Exception e) {
                return false;
            }
        }, 15000);
        for (Map.Entry<MessageQueue, org.apache.rocketmq.common.admin.OffsetWrapper> e
            : ctx.admin().examineConsumeStats(group).getOffsetTable().entrySet()) {
            offsets.put(e.getKey().getBrokerName() + "/" + e.getKey().getQueueId(), e.getValue().getConsumerOffset()
                - e.getValue().getBrokerOffset());
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("lagPerQueue", new TreeSet<>(offsets.values()));
        out.put("consumed", got.get());
        return out;
    }

    /** A new group with the default CONSUME_FROM_LAST_OFFSET: 4.9.8 brokers answer offset 0 for a queue whose
     * messages are still in memory (min offset 0), so the group gets what was sent before it started. */
    public static Map<String, Object> fromLastOffset(Ctx ctx) throws Exception {
        String topic = ctx.name("JLast");
        ctx.createTopic(topic, 2);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        send(ctx, producer, topic, "A", 4, "before");
        List<String> got = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.name("CG"));
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener(recorder(got));
        consumer.start();
        ctx.onClose(consumer::shutdown);
        Ctx.await(() -> got.size() >= 4, 15000);
        send(ctx, producer, topic, "A", 2, "after");
        Ctx.await(() -> got.size() >= 6, 15000);
        Thread.sleep(500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("received", sorted(got));
        return out;
    }
}
