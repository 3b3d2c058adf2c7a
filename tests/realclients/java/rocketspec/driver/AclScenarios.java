package rocketspec.driver;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Plain ACL seen by the Java client with {@code AclClientRPCHook}: an admin creates the topics, a user account sends
 * and consumes where it may, and what is refused (a denied topic, no credentials, a wrong secret, an admin request
 * from the user) is reported as the client sees it: exception, response code, the broker's remark.
 */
public final class AclScenarios {
    private AclScenarios() {
    }

    private static RPCHook hook(String accessKey, String secretKey) {
        return new AclClientRPCHook(new SessionCredentials(accessKey, secretKey));
    }

    /** The innermost MQBrokerException of an exception chain: its code and remark, or the exception itself. */
    private static Map<String, Object> refusal(Throwable e) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof MQBrokerException) {
                out.put("code", ((MQBrokerException) t).getResponseCode());
                out.put("remark", ((MQBrokerException) t).getErrorMessage());
                return out;
            }
        }
        return Ctx.error(e);
    }

    private static DefaultMQAdminExt adminExt(Ctx ctx, RPCHook rpcHook) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(rpcHook, 5000);
        admin.setNamesrvAddr(ctx.namesrv);
        admin.setInstanceName("acl-admin-" + System.nanoTime());
        admin.start();
        ctx.onClose(admin::shutdown);
        return admin;
    }

    private static DefaultMQProducer producer(Ctx ctx, String group, RPCHook rpcHook) throws Exception {
        DefaultMQProducer producer = rpcHook == null ? new DefaultMQProducer(group) : new DefaultMQProducer(group, rpcHook);
        producer.setNamesrvAddr(ctx.namesrv);
        producer.setInstanceName("acl-p-" + System.nanoTime());
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        ctx.onClose(producer::shutdown);
        return producer;
    }

    private static Object trySend(DefaultMQProducer producer, String topic, String body) {
        try {
            SendResult result = producer.send(new Message(topic, "TagA", Ctx.bytes(body)));
            return result.getSendStatus().name();
        } catch (Exception e) {
            return refusal(e);
        }
    }

    /** args: ak, sk (the user), adminAk, adminSk, topic (the user may PUB|SUB), denied (DENY), group, count. */
    public static Map<String, Object> roundTrip(Ctx ctx) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        String topic = ctx.str("topic");
        String denied = ctx.str("denied");
        RPCHook user = hook(ctx.str("ak"), ctx.str("sk"));
        DefaultMQAdminExt admin = adminExt(ctx, hook(ctx.str("adminAk"), ctx.str("adminSk")));
        DefaultMQAdminExt userAdmin = adminExt(ctx, user);
        Map<String, String> masters = new TreeMap<>();
        admin.examineBrokerClusterInfo().getBrokerAddrTable().values()
            .forEach(data -> masters.put(data.getBrokerName(), data.getBrokerAddrs().get(0L)));
        String broker = masters.values().iterator().next();

        // An admin-only request (UPDATE_AND_CREATE_TOPIC) from the user account, then from the admin.
        try {
            userAdmin.createAndUpdateTopicConfig(broker, new TopicConfig(topic, 4, 4, 6));
            out.put("userCreateTopic", "OK");
        } catch (Exception e) {
            out.put("userCreateTopic", refusal(e));
        }
        for (String name : new String[] {topic, denied}) {
            admin.createAndUpdateTopicConfig(broker, new TopicConfig(name, 4, 4, 6));
            final String awaited = name;
            Ctx.awaitTrue(() -> {
                try {
                    return !admin.examineTopicRouteInfo(awaited).getQueueDatas().isEmpty();
                } catch (Exception e) {
                    return false;
                }
            }, 15000, "route of " + name);
        }

        int count = ctx.num("count", 4);
        DefaultMQProducer producer = producer(ctx, ctx.str("producerGroup", "AclPG"), user);
        List<Object> sends = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sends.add(trySend(producer, topic, "acl-" + i));
        }
        out.put("sends", sends);
        out.put("deniedTopic", trySend(producer, denied, "denied"));
        out.put("noCredentials", trySend(producer(ctx, "AclPGNone", null), topic, "none"));
        out.put("wrongSecret", trySend(producer(ctx, "AclPGWrong", hook(ctx.str("ak"), "wrong-secret")), topic, "x"));
        out.put("unknownKey", trySend(producer(ctx, "AclPGUnknown", hook("NoSuchKey1", ctx.str("sk"))), topic, "x"));

        // The user consumes what it sent (its group's default perm is SUB).
        Map<String, Boolean> received = new ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(ctx.str("group"), user,
            new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely());
        consumer.setNamesrvAddr(ctx.namesrv);
        consumer.setInstanceName("acl-c-" + System.nanoTime());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt msg : msgs) {
                received.put(new String(msg.getBody(), java.nio.charset.StandardCharsets.UTF_8), true);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.onClose(consumer::shutdown);
        Ctx.await(() -> {
            for (int i = 0; i < count; i++) {
                if (!received.containsKey("acl-" + i)) {
                    return false;
                }
            }
            return true;
        }, 30000);
        List<String> mine = new ArrayList<>();
        for (String body : new TreeMap<>(received).keySet()) {
            if (body.startsWith("acl-")) {
                mine.add(body);
            }
        }
        out.put("received", mine);
        return out;
    }
}
