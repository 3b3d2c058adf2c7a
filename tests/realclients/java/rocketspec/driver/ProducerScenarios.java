package rocketspec.driver;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** Producers: sync, async, oneway, batch, orderly and transactional sends, and what a consumer then receives. */
public final class ProducerScenarios {
    private ProducerScenarios() {
    }

    static DefaultMQProducer started(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer(ctx.name("PG"));
        producer.start();
        ctx.onClose(producer::shutdown);
        return producer;
    }

    /** A push consumer of TOPIC (subscription "*") from the first offset that records every message it gets. */
    static List<MessageExt> consumeAll(Ctx ctx, String topic, String group) throws Exception {
        List<MessageExt> seen = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.subscribe(topic, "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            seen.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.onClose(consumer::shutdown);
        return seen;
    }

    static List<String> sortedBodies(List<MessageExt> msgs) {
        List<String> out = new ArrayList<>();
        synchronized (msgs) {
            for (MessageExt m : msgs) {
                out.add(new String(m.getBody(), java.nio.charset.StandardCharsets.UTF_8));
            }
        }
        Collections.sort(out);
        return out;
    }

    public static Map<String, Object> syncSend(Ctx ctx) throws Exception {
        String topic = ctx.name("JSync");
        ctx.createTopic(topic, 4);
        DefaultMQProducer producer = started(ctx);
        List<Object> results = new ArrayList<>();
        for (int i = 0; i < ctx.num("count", 4); i++) {
            Message msg = new Message(topic, "TagA", "key-" + i, Ctx.bytes("body-" + i));
            results.add(Ctx.sendResult(producer.send(msg)));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        return out;
    }

    /** Async sends, then oneway sends, then one consumer that must get them all, each once. */
    public static Map<String, Object> asyncAndOneway(Ctx ctx) throws Exception {
        String topic = ctx.name("JAsync");
        ctx.createTopic(topic, 4);
        DefaultMQProducer producer = started(ctx);
        int count = ctx.num("count", 20);
        CountDownLatch done = new CountDownLatch(count);
        Map<String, AtomicInteger> outcomes = new ConcurrentHashMap<>();
        for (int i = 0; i < count; i++) {
            producer.send(new Message(topic, "A", Ctx.bytes("async-" + i)), new SendCallback() {
                @Override
                public void onSuccess(SendResult result) {
                    outcomes.computeIfAbsent(String.valueOf(result.getSendStatus()), k -> new AtomicInteger()).incrementAndGet();
                    done.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    outcomes.computeIfAbsent(e.getClass().getSimpleName(), k -> new AtomicInteger()).incrementAndGet();
                    done.countDown();
                }
            });
        }
        boolean finished = done.await(30, TimeUnit.SECONDS);
        for (int i = 0; i < count; i++) {
            producer.sendOneway(new Message(topic, "B", Ctx.bytes("oneway-" + i)));
        }
        List<MessageExt> seen = consumeAll(ctx, topic, ctx.name("CG"));
        Ctx.await(() -> seen.size() >= 2 * count, 30000);
        Thread.sleep(500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("finished", finished);
        out.put("outcomes", new TreeMap<>(outcomes));
        out.put("received", sortedBodies(seen));
        return out;
    }

    /** A batch of messages: one send result with every id, then each message delivered on its own. */
    public static Map<String, Object> batch(Ctx ctx) throws Exception {
        String topic = ctx.name("JBatch");
        ctx.createTopic(topic, 1);
        DefaultMQProducer producer = started(ctx);
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Message msg = new Message(topic, "TagB", "bk-" + i, Ctx.bytes("batch-" + i));
            msg.putUserProperty("idx", String.valueOf(i));
            batch.add(msg);
        }
        SendResult result = producer.send(batch);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("status", String.valueOf(result.getSendStatus()));
        out.put("ids", result.getMsgId().split(",").length);
        out.put("offsetIds", result.getOffsetMsgId().split(",").length);
        out.put("queueOffset", result.getQueueOffset());
        List<MessageExt> seen = consumeAll(ctx, topic, ctx.name("CG"));
        Ctx.await(() -> seen.size() >= 3, 20000);
        List<Object> msgs = new ArrayList<>();
        synchronized (seen) {
            List<MessageExt> copy = new ArrayList<>(seen);
            copy.sort((a, b) -> Long.compare(a.getQueueOffset(), b.getQueueOffset()));
            for (MessageExt m : copy) {
                msgs.add(Ctx.message(m));
            }
        }
        out.put("messages", msgs);
        // A batch may not mix topics, nor carry a delay level: the client refuses it before sending.
        List<Message> mixed = new ArrayList<>();
        mixed.add(new Message(topic, Ctx.bytes("x")));
        mixed.add(new Message(topic + "X", Ctx.bytes("y")));
        try {
            producer.send(mixed);
            out.put("mixed", "sent");
        } catch (Exception e) {
            out.put("mixed", Ctx.error(e));
        }
        return out;
    }

    /** Orderly: messages of one key go to one queue (selector), an orderly consumer gets each queue in order. */
    public static Map<String, Object> orderly(Ctx ctx) throws Exception {
        String topic = ctx.name("JOrder");
        ctx.createTopic(topic, 4);
        DefaultMQProducer producer = started(ctx);
        int keys = 4;
        int per = ctx.num("per", 10);
        for (int i = 0; i < per; i++) {
            for (int k = 0; k < keys; k++) {
                Message msg = new Message(topic, "O", "order-" + k, Ctx.bytes(k + ":" + i));
                producer.send(msg, (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), k);
            }
        }
        Map<String, List<String>> perKey = new ConcurrentHashMap<>();
        Map<String, String> keyQueue = new ConcurrentHashMap<>();
        AtomicInteger total = new AtomicInteger();
        AtomicInteger suspended = new AtomicInteger();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.name("CG"));
        consumer.subscribe(topic, "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), java.nio.charset.StandardCharsets.UTF_8);
                String key = body.split(":")[0];
                // The first time message 3 of each key comes, ask for it again: orderly consumption suspends the
                // queue and redelivers the same message before any later one.
                if (body.endsWith(":3") && m.getReconsumeTimes() == 0) {
                    suspended.incrementAndGet();
                    return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                }
                perKey.computeIfAbsent(key, k -> Collections.synchronizedList(new ArrayList<>())).add(body);
                keyQueue.put(key, m.getBrokerName() + "/" + m.getQueueId());
                total.incrementAndGet();
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        consumer.start();
        ctx.onClose(consumer::shutdown);
        Ctx.await(() -> total.get() >= keys * per, 40000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("perKey", new TreeMap<>(perKey));
        out.put("queues", new TreeMap<>(keyQueue).size());
        out.put("suspended", suspended.get());
        return out;
    }

    /** Transactions: COMMIT, ROLLBACK and UNKNOW-then-checked; the consumer gets exactly the committed ones. */
    public static Map<String, Object> transactions(Ctx ctx) throws Exception {
        String topic = ctx.name("JTxn");
        ctx.createTopic(topic, 2);
        Map<String, Integer> checks = new ConcurrentHashMap<>();
        Map<String, String> checkedProps = new ConcurrentHashMap<>();
        TransactionMQProducer producer = ctx.transactionProducer(ctx.name("TPG"));
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.valueOf((String) arg);
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                String body = new String(msg.getBody(), java.nio.charset.StandardCharsets.UTF_8);
                checks.merge(body, 1, Integer::sum);
                checkedProps.put("topic", msg.getTopic());
                checkedProps.put("TRAN_MSG", String.valueOf(msg.getProperty("TRAN_MSG")));
                checkedProps.put("PGROUP", String.valueOf(msg.getProperty("PGROUP")));
                return body.startsWith("unknown-commit") ? LocalTransactionState.COMMIT_MESSAGE
                    : LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        producer.start();
        ctx.onClose(producer::shutdown);
        List<Object> results = new ArrayList<>();
        String[][] plan = {{"commit", "COMMIT_MESSAGE"}, {"rollback", "ROLLBACK_MESSAGE"},
            {"unknown-commit", "UNKNOW"}, {"unknown-rollback", "UNKNOW"}};
        for (String[] step : plan) {
            TransactionSendResult result = producer.sendMessageInTransaction(
                new Message(topic, "T", Ctx.bytes(step[0])), step[1]);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("send", String.valueOf(result.getSendStatus()));
            r.put("local", String.valueOf(result.getLocalTransactionState()));
            r.put("hasTransactionId", result.getTransactionId() != null);
            results.add(r);
        }
        List<MessageExt> seen = consumeAll(ctx, topic, ctx.name("CG"));
        Ctx.await(() -> seen.size() >= 2 && checks.size() >= 2, 30000);
        Thread.sleep(1500);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        out.put("received", sortedBodies(seen));
        out.put("checked", new TreeMap<>(checks).keySet());
        out.put("checkedProps", new TreeMap<>(checkedProps));
        List<Object> msgs = new ArrayList<>();
        synchronized (seen) {
            for (MessageExt m : seen) {
                msgs.add(Ctx.message(m));
            }
        }
        msgs.sort((a, b) -> String.valueOf(((Map<?, ?>) a).get("body")).compareTo(String.valueOf(((Map<?, ?>) b).get("body"))));
        out.put("messages", msgs);
        return out;
    }

    /** Errors a producer sees: a topic that does not exist anywhere (auto-create on: created), a bad topic name,
     * a body over the limit, a message to a topic that is not writable. */
    public static Map<String, Object> errors(Ctx ctx) throws Exception {
        DefaultMQProducer producer = started(ctx);
        producer.setRetryTimesWhenSendFailed(0);
        Map<String, Object> out = new LinkedHashMap<>();
        String auto = ctx.name("JAuto");
        try {
            SendResult result = producer.send(new Message(auto, Ctx.bytes("first")));
            out.put("autoCreate", String.valueOf(result.getSendStatus()));
            out.put("autoCreateQueues", ctx.admin().examineTopicRouteInfo(auto).getQueueDatas().get(0).getWriteQueueNums());
        } catch (Exception e) {
            out.put("autoCreate", Ctx.error(e));
        }
        try {
            producer.send(new Message("bad topic!", Ctx.bytes("x")));
            out.put("badName", "sent");
        } catch (Exception e) {
            out.put("badName", Ctx.error(e));
        }
        try {
            producer.send(new Message(auto, new byte[4 * 1024 * 1024 + 1]));
            out.put("tooLarge", "sent");
        } catch (Exception e) {
            out.put("tooLarge", Ctx.error(e));
        }
        String readOnly = ctx.name("JReadOnly");
        for (String addr : ctx.masters().values()) {
            ctx.admin().createAndUpdateTopicConfig(addr, new org.apache.rocketmq.common.TopicConfig(readOnly, 2, 2, 4));
        }
        Thread.sleep(300);
        try {
            producer.send(new Message(readOnly, Ctx.bytes("x")));
            out.put("readOnly", "sent");
        } catch (Exception e) {
            out.put("readOnly", Ctx.error(e));
        }
        try {
            MessageQueue mq = new MessageQueue(auto, "no-such-broker", 0);
            producer.send(new Message(auto, Ctx.bytes("x")), mq);
            out.put("unknownBroker", "sent");
        } catch (Exception e) {
            out.put("unknownBroker", Ctx.error(e));
        }
        return out;
    }

    /** vipChannelEnabled: the client sends to the broker's port - 2, where 4.9.8 brokers listen too. */
    public static Map<String, Object> vipChannel(Ctx ctx) throws Exception {
        String topic = ctx.name("JVip");
        ctx.createTopic(topic, 2);
        DefaultMQProducer producer = ctx.producer(ctx.name("PG"));
        producer.setVipChannelEnabled(true);
        producer.start();
        ctx.onClose(producer::shutdown);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("status", String.valueOf(producer.send(new Message(topic, Ctx.bytes("vip"))).getSendStatus()));
        List<MessageExt> seen = consumeAll(ctx, topic, ctx.name("CG"));
        Ctx.await(() -> seen.size() >= 1, 20000);
        out.put("received", sortedBodies(seen));
        return out;
    }
}
