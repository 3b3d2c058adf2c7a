package rocketspec.driver;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Request-reply: DefaultMQProducer.request sends a message and waits; a consumer answers with
 * MessageUtil.createReplyMessage, which its producer sends with SEND_REPLY_MESSAGE(_V2); the broker pushes the reply
 * to the requester (PUSH_REPLY_MESSAGE_TO_CLIENT) and stores it in &lt;cluster&gt;_REPLY_TOPIC.
 */
public final class ReplyScenarios {
    private ReplyScenarios() {
    }

    static DefaultMQProducer producer(Ctx ctx, String prefix) throws Exception {
        DefaultMQProducer producer = ctx.producer(ctx.name(prefix));
        producer.start();
        ctx.onClose(producer::shutdown);
        return producer;
    }

    /** A request answered by a consumer: what the replier got, what its reply send returned, what came back. */
    public static Map<String, Object> requestReply(Ctx ctx) throws Exception {
        String topic = ctx.name("JRequest");
        ctx.createTopic(topic, 1);
        DefaultMQProducer replier = producer(ctx, "RPG");
        AtomicReference<Map<String, Object>> request = new AtomicReference<>();
        AtomicReference<Object> replySent = new AtomicReference<>();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.name("RCG"));
        consumer.subscribe(topic, "*");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                request.set(Ctx.message(m));
                try {
                    Message reply = MessageUtil.createReplyMessage(m,
                        Ctx.bytes("re:" + new String(m.getBody(), StandardCharsets.UTF_8)));
                    reply.setKeys("reply-key");
                    replySent.set(Ctx.sendResult(replier.send(reply)));
                } catch (Exception e) {
                    replySent.set(Ctx.error(e));
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.onClose(consumer::shutdown);

        DefaultMQProducer requester = producer(ctx, "RQG");
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            Message msg = new Message(topic, "TagR", "request-key", Ctx.bytes("ping"));
            Message reply = requester.request(msg, 15000);
            out.put("reply", reply instanceof MessageExt ? Ctx.message((MessageExt) reply) : String.valueOf(reply));
        } catch (Exception e) {
            out.put("reply", Ctx.error(e));
        }
        Ctx.await(() -> replySent.get() != null, 10000);
        out.put("request", request.get());
        out.put("replySent", replySent.get());
        Thread.sleep(1000);  // the stored reply is indexed by the broker's dispatch thread
        List<Map<String, Object>> stored = new ArrayList<>();
        for (MessageExt m : ctx.admin().queryMessage("DefaultCluster_REPLY_TOPIC", "reply-key", 32, 0,
            Long.MAX_VALUE).getMessageList()) {
            if (String.valueOf(m.getProperty(MessageConst.PROPERTY_CORRELATION_ID))
                .equals(String.valueOf(request.get() == null ? null
                    : ((Map<?, ?>) request.get().get("properties")).get(MessageConst.PROPERTY_CORRELATION_ID)))) {
                stored.add(Ctx.message(m));
            }
        }
        out.put("storedReplies", stored);
        return out;
    }

    /**
     * Replies nobody waits for: one to a client id no broker knows, one without REPLY_TO_CLIENT. The broker answers
     * SYSTEM_ERROR (the producer retries it on the other broker, then throws), yet stores every attempt.
     */
    public static Map<String, Object> replyToNobody(Ctx ctx) throws Exception {
        DefaultMQProducer replier = producer(ctx, "RPG");
        String key = ctx.name("nobody-key");
        Map<String, Object> out = new LinkedHashMap<>();
        Message unknown = new Message("DefaultCluster_REPLY_TOPIC", "", key, Ctx.bytes("lost"));
        MessageAccessor.putProperty(unknown, MessageConst.PROPERTY_MESSAGE_TYPE, "reply");
        MessageAccessor.putProperty(unknown, MessageConst.PROPERTY_CORRELATION_ID, "corr-" + key);
        MessageAccessor.putProperty(unknown, MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT, "127.0.0.9@nobody");
        MessageAccessor.putProperty(unknown, MessageConst.PROPERTY_MESSAGE_TTL, "3000");
        try {
            out.put("unknownClient", Ctx.sendResult(replier.send(unknown)));
        } catch (Exception e) {
            out.put("unknownClient", Ctx.error(e));
        }
        Message noClient = new Message("DefaultCluster_REPLY_TOPIC", "", key, Ctx.bytes("lost-too"));
        MessageAccessor.putProperty(noClient, MessageConst.PROPERTY_MESSAGE_TYPE, "reply");
        MessageAccessor.putProperty(noClient, MessageConst.PROPERTY_CORRELATION_ID, "corr2-" + key);
        try {
            out.put("noClient", Ctx.sendResult(replier.send(noClient)));
        } catch (Exception e) {
            out.put("noClient", Ctx.error(e));
        }
        Thread.sleep(1000);
        List<String> stored = new ArrayList<>();
        for (MessageExt m : ctx.admin().queryMessage("DefaultCluster_REPLY_TOPIC", key, 32, 0, Long.MAX_VALUE)
            .getMessageList()) {
            stored.add(new String(m.getBody(), StandardCharsets.UTF_8));
        }
        stored.sort(null);
        out.put("stored", stored);
        return out;
    }
}
