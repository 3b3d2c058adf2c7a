package rocketspec.driver;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.admin.TopicOffset;
import org.apache.rocketmq.common.admin.TopicStatsTable;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.common.protocol.body.KVTable;
import org.apache.rocketmq.common.protocol.body.ProducerConnection;
import org.apache.rocketmq.common.protocol.body.TopicList;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** DefaultMQAdminExt: the admin calls mqadmin is built on, against a cluster with two masters. */
public final class AdminScenarios {
    private AdminScenarios() {
    }

    static Object attempt(Callable call) {
        try {
            return call.call();
        } catch (Throwable e) {
            return Ctx.error(e);
        }
    }

    interface Callable {
        Object call() throws Exception;
    }

    static boolean allSent(TopicStatsTable table) {
        for (Map.Entry<MessageQueue, TopicOffset> e : table.getOffsetTable().entrySet()) {
            if (e.getValue().getMaxOffset() < e.getKey().getQueueId() + 1) {
                return false;
            }
        }
        return true;
    }

    static Map<String, Object> stats(TopicStatsTable table) {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<MessageQueue, TopicOffset> e : table.getOffsetTable().entrySet()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("min", e.getValue().getMinOffset());
            row.put("max", e.getValue().getMaxOffset());
            row.put("lastUpdated", e.getValue().getLastUpdateTimestamp() > 0);
            out.put(e.getKey().getBrokerName() + "/" + e.getKey().getTopic() + "/" + e.getKey().getQueueId(), row);
        }
        return out;
    }

    static List<Object> route(TopicRouteData route) {
        List<Object> out = new ArrayList<>();
        List<QueueData> queues = new ArrayList<>(route.getQueueDatas());
        Collections.sort(queues);
        for (QueueData q : queues) {
            out.add(q.getBrokerName() + " r" + q.getReadQueueNums() + " w" + q.getWriteQueueNums() + " p" + q.getPerm());
        }
        return out;
    }

    /** Topics: create on every master, stats, lists, route, cluster info, runtime info and config, then delete. */
    public static Map<String, Object> topics(Ctx ctx) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        DefaultMQAdminExt admin = ctx.admin();
        String topic = ctx.name("AdmTopic");
        ctx.createTopic(topic, 3);
        Map<String, String> masters = ctx.masters();
        out.put("brokers", new ArrayList<>(masters.keySet()));
        out.put("route", route(admin.examineTopicRouteInfo(topic)));
        out.put("statsEmpty", stats(admin.examineTopicStats(topic)));

        DefaultMQProducer producer = ctx.producer(ctx.name("AdmPG"));
        producer.start();
        ctx.onClose(producer::shutdown);
        for (String broker : masters.keySet()) {
            for (int q = 0; q < 3; q++) {
                for (int i = 0; i <= q; i++) {
                    SendResult r = producer.send(new Message(topic, Ctx.bytes("m" + q + i)), new MessageQueue(topic, broker, q));
                }
            }
        }
        // A 4.9.8 broker answers a send once the commit log has it and builds the consume queue a moment later
        // (ReputMessageService): wait, bounded, for queue q to show its q + 1 messages.
        TopicStatsTable sent = admin.examineTopicStats(topic);
        for (int tries = 0; tries < 50 && !allSent(sent); tries++) {
            Thread.sleep(100);
            sent = admin.examineTopicStats(topic);
        }
        out.put("stats", stats(sent));
        TopicList all = admin.fetchAllTopicList();
        out.put("listed", all.getTopicList().contains(topic));
        out.put("clusterTopicsListed", admin.fetchTopicsByCLuster("DefaultCluster").getTopicList().contains(topic));
        ClusterInfo info = admin.examineBrokerClusterInfo();
        out.put("clusters", new TreeMap<>(info.getClusterAddrTable()));
        Map<String, Object> runtime = new TreeMap<>();
        for (Map.Entry<String, String> m : masters.entrySet()) {
            KVTable kv = admin.fetchBrokerRuntimeStats(m.getValue());
            TreeSet<String> keys = new TreeSet<>();
            for (String key : kv.getTable().keySet()) {
                // One scheduleMessageOffset_N per delay level that has held a message since the broker started:
                // which levels depends on what ran before on the cluster, not on this scenario.
                if (!key.startsWith("scheduleMessageOffset_")) {
                    keys.add(key.startsWith("commitLogDiskRatio_") ? "commitLogDiskRatio_<path>" : key);
                }
            }
            runtime.put(m.getKey(), keys);
            runtime.put(m.getKey() + ".msgPutTotalTodayNow", kv.getTable().get("msgPutTotalTodayNow"));
            runtime.put(m.getKey() + ".brokerVersionDesc", kv.getTable().get("brokerVersionDesc"));
        }
        out.put("runtime", runtime);
        String addrA = masters.get("broker-a");
        Properties config = admin.getBrokerConfig(addrA);
        out.put("configKeys", new TreeSet<>(config.stringPropertyNames()));
        Map<String, Object> configValues = new TreeMap<>();
        for (String key : new String[] {"brokerName", "brokerClusterName", "brokerId", "defaultTopicQueueNums",
            "autoCreateTopicEnable", "brokerPermission", "messageDelayLevel", "transactionTimeOut", "maxMessageSize"}) {
            configValues.put(key, config.getProperty(key));
        }
        out.put("config", configValues);
        Properties update = new Properties();
        update.setProperty("maxMessageSize", "2097152");
        update.setProperty("noSuchKey", "x");
        admin.updateBrokerConfig(addrA, update);
        Properties after = admin.getBrokerConfig(addrA);
        out.put("updated", after.getProperty("maxMessageSize"));
        out.put("unknownKeyKept", after.containsKey("noSuchKey"));
        Properties restore = new Properties();
        restore.setProperty("maxMessageSize", "4194304");
        admin.updateBrokerConfig(addrA, restore);
        out.put("blackListed", attempt(() -> {
            Properties bad = new Properties();
            bad.setProperty("rocketmqHome", "/x");
            admin.updateBrokerConfig(addrA, bad);
            return "ok";
        }));
        out.put("earliest", admin.earliestMsgStoreTime(new MessageQueue(topic, "broker-a", 1)) > 0);
        out.put("earliestEmpty", admin.earliestMsgStoreTime(new MessageQueue(ctx.name("NoTopic"), "broker-a", 0)));
        out.put("statsUnknown", attempt(() -> admin.examineTopicStats(ctx.name("NoTopic"))));

        admin.deleteTopicInBroker(new java.util.HashSet<>(masters.values()), topic);
        out.put("routeAfterBrokerDelete", route(admin.examineTopicRouteInfo(topic)));
        admin.deleteTopicInNameServer(new java.util.HashSet<>(java.util.Arrays.asList(ctx.namesrv.split(";"))), topic, "DefaultCluster");
        out.put("routeAfterDelete", attempt(() -> admin.examineTopicRouteInfo(topic)));
        out.put("listedAfterDelete", admin.fetchAllTopicList().getTopicList().contains(topic));
        return out;
    }

    static Map<String, Object> connection(Connection c) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("clientId", c.getClientId());
        out.put("language", String.valueOf(c.getLanguage()));
        out.put("version", c.getVersion());
        out.put("clientAddr", c.getClientAddr());
        return out;
    }

    static Map<String, Object> consumeStats(ConsumeStats stats) {
        Map<String, Object> out = new TreeMap<>();
        boolean retryEmpty = true;
        for (Map.Entry<MessageQueue, OffsetWrapper> e : stats.getOffsetTable().entrySet()) {
            OffsetWrapper w = e.getValue();
            if (e.getKey().getTopic().startsWith("%RETRY%")) {
                // A broker lists its retry queue once the consumer committed an offset for it, which depends on
                // whether the consumer had pulled that queue when it last persisted offsets (on either target):
                // only what such a row says is compared, not which brokers have one.
                retryEmpty &= w.getBrokerOffset() == 0 && w.getConsumerOffset() == 0;
                continue;
            }
            out.put(e.getKey().getBrokerName() + "/" + e.getKey().getTopic() + "/" + e.getKey().getQueueId(),
                w.getBrokerOffset() + "/" + w.getConsumerOffset() + "/" + (w.getLastTimestamp() > 0));
        }
        out.put("%RETRY% rows all empty", retryEmpty);
        return out;
    }

    /** Consumers and producers: consume everything, look at progress and connections, groups, reset by time. */
    public static Map<String, Object> consumers(Ctx ctx) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        DefaultMQAdminExt admin = ctx.admin();
        String topic = ctx.name("AdmCTopic");
        String group = ctx.name("AdmCG");
        String producerGroup = ctx.name("AdmCPG");
        ctx.createTopic(topic, 2);
        Map<String, String> masters = ctx.masters();
        List<MessageExt> seen = consumedEverywhere(ctx, topic, producerGroup, group, masters);
        final int total = 2 * masters.size();  // one message per queue, two queues per master
        ConsumeStats stats = admin.examineConsumeStats(group);
        Map<String, Object> progress = consumeStats(stats);
        out.put("progress", progress);
        out.put("consumeTpsIsNumber", stats.getConsumeTps() >= 0);
        out.put("progressOfTopic", consumeStats(admin.examineConsumeStats(group, topic)));

        ConsumerConnection cc = admin.examineConsumerConnectionInfo(group);
        List<Object> conns = new ArrayList<>();
        for (Connection c : cc.getConnectionSet()) {
            conns.add(connection(c));
        }
        out.put("consumerConnections", conns);
        out.put("consumeType", String.valueOf(cc.getConsumeType()));
        out.put("messageModel", String.valueOf(cc.getMessageModel()));
        out.put("consumeFromWhere", String.valueOf(cc.getConsumeFromWhere()));
        Map<String, Object> subs = new TreeMap<>();
        for (Map.Entry<String, SubscriptionData> e : cc.getSubscriptionTable().entrySet()) {
            subs.put(e.getKey(), e.getValue().getSubString() + " " + e.getValue().getExpressionType()
                + " " + e.getValue().getTagsSet() + " " + e.getValue().getCodeSet());
        }
        out.put("subscriptions", subs);
        ProducerConnection pc = admin.examineProducerConnectionInfo(producerGroup, topic);
        List<Object> pconns = new ArrayList<>();
        for (Connection c : pc.getConnectionSet()) {
            pconns.add(connection(c));
        }
        out.put("producerConnections", pconns);
        out.put("noProducer", attempt(() -> admin.examineProducerConnectionInfo(ctx.name("NoPG"), topic)));
        out.put("noConsumer", attempt(() -> admin.examineConsumerConnectionInfo(ctx.name("NoCG"))));
        out.put("noStats", attempt(() -> admin.examineConsumeStats(ctx.name("NoCG"))));

        String clientId = cc.getConnectionSet().iterator().next().getClientId();
        ConsumerRunningInfo running = admin.getConsumerRunningInfo(group, clientId, false);
        TreeSet<String> mqs = new TreeSet<>();
        for (MessageQueue mq : running.getMqTable().keySet()) {
            // The retry topic's queues the consumer holds depend on which brokers its route listed at its last
            // rebalance (a retry topic is routed once the broker created it): timing, on either target.
            if (!mq.getTopic().startsWith("%RETRY%")) {
                mqs.add(mq.getBrokerName() + "/" + mq.getTopic() + "/" + mq.getQueueId());
            }
        }
        out.put("runningMqs", mqs);
        out.put("runningUnknownClient", attempt(() -> admin.getConsumerRunningInfo(group, "nobody@0", false)));

        // Subscription groups on broker-a.
        String addrA = masters.get("broker-a");
        String subGroup = ctx.name("AdmSG");
        SubscriptionGroupConfig sg = new SubscriptionGroupConfig();
        sg.setGroupName(subGroup);
        sg.setRetryMaxTimes(3);
        sg.setConsumeBroadcastEnable(false);
        admin.createAndUpdateSubscriptionGroupConfig(addrA, sg);
        SubscriptionGroupConfig read = admin.examineSubscriptionGroupConfig(addrA, subGroup);
        out.put("subGroup", read == null ? null : read.toString());
        admin.deleteSubscriptionGroup(addrA, subGroup);
        out.put("subGroupDeleted", attempt(() -> String.valueOf(admin.examineSubscriptionGroupConfig(addrA, subGroup))));

        // Reset to the beginning: the broker computes the offsets and tells the consumer, which consumes again.
        int before = seen.size();
        Map<MessageQueue, Long> reset = admin.resetOffsetByTimestamp(topic, group, 0L, true);
        Map<String, Object> resetOut = new TreeMap<>();
        for (Map.Entry<MessageQueue, Long> e : reset.entrySet()) {
            resetOut.put(e.getKey().getBrokerName() + "/" + e.getKey().getTopic() + "/" + e.getKey().getQueueId(), e.getValue());
        }
        out.put("reset", resetOut);
        out.put("reconsumed", Ctx.await(() -> seen.size() >= before + total, 40000));
        out.put("resetUnknownTopic", attempt(() -> admin.resetOffsetByTimestamp(ctx.name("NoTopic"), group, 0L, true)));
        out.put("resetOffline", attempt(() -> admin.resetOffsetByTimestamp(topic, ctx.name("NoCG"), 0L, true)));
        return out;
    }

    /** For mqadmin: a topic with one message per queue, consumed by a push consumer whose offsets reached the
     * brokers; prints READY on stdout, then keeps producer and consumer connected for "holdMs". */
    public static Map<String, Object> hold(Ctx ctx) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        String topic = ctx.str("topic");
        String group = ctx.str("group");
        ctx.createTopic(topic, 2);
        List<MessageExt> seen = consumedEverywhere(ctx, topic, ctx.str("producerGroup"), group, ctx.masters());
        System.out.println("READY");
        System.out.flush();
        Thread.sleep(ctx.num("holdMs", 20000));
        out.put("consumed", seen.size());
        return out;
    }

    /** One message to each queue of TOPIC on every master, all consumed by a push consumer of GROUP (kept running,
     * persisting offsets every second) whose offsets have reached the brokers; what it received. */
    static List<MessageExt> consumedEverywhere(Ctx ctx, String topic, String producerGroup, String group,
        Map<String, String> masters) throws Exception {
        DefaultMQAdminExt admin = ctx.admin();
        DefaultMQProducer producer = ctx.producer(producerGroup);
        producer.start();
        ctx.onClose(producer::shutdown);
        int sent = 0;
        for (String broker : masters.keySet()) {
            for (int q = 0; q < 2; q++) {
                producer.send(new Message(topic, Ctx.bytes("m" + sent)), new MessageQueue(topic, broker, q));
                sent++;
            }
        }
        final int total = sent;
        List<MessageExt> seen = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.subscribe(topic, "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            seen.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.onClose(consumer::shutdown);
        Ctx.awaitTrue(() -> seen.size() >= total, 30000, "first consumption");
        // The committed offsets reach the brokers on the next persist (every second here).
        Ctx.await(() -> {
            try {
                ConsumeStats s = admin.examineConsumeStats(group);
                long rows = s.getOffsetTable().keySet().stream().filter(mq -> mq.getTopic().equals(topic)).count();
                return s.computeTotalDiff() == 0 && rows >= 2 * masters.size();
            } catch (Exception e) {
                return false;
            }
        }, 15000);
        return seen;
    }
}
