package rocketspec.driver;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Messages looked up by key, unique key and id (QUERY_MESSAGE from the index, VIEW_MESSAGE_BY_ID by commit-log
 * offset): what DefaultMQAdminExt and DefaultMQProducer answer, including the errors.
 */
public final class QueryScenarios {
    private QueryScenarios() {
    }

    static DefaultMQProducer producer(Ctx ctx) throws Exception {
        DefaultMQProducer producer = ctx.producer(ctx.name("QPG"));
        producer.start();
        ctx.onClose(producer::shutdown);
        return producer;
    }

    static List<Map<String, Object>> sorted(List<MessageExt> msgs) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (MessageExt m : msgs) {
            out.add(Ctx.message(m));
        }
        out.sort(Comparator.comparing(m -> String.valueOf(m.get("body"))));
        return out;
    }

    interface Call {
        Object run() throws Exception;
    }

    /** The call's answer, or the error it threw. */
    static Object attempt(Call call) {
        try {
            return call.run();
        } catch (Exception e) {
            return Ctx.error(e);
        }
    }

    static List<String> bodies(QueryResult result) {
        List<String> out = new ArrayList<>();
        for (MessageExt m : result.getMessageList()) {
            out.add(new String(m.getBody(), StandardCharsets.UTF_8));
        }
        out.sort(null);
        return out;
    }

    /**
     * Three messages (one queue on each broker, so consecutive sends alternate brokers) with keys, then queries by key
     * through the admin tool and the producer: every match, a maxNum of 1 (one per broker), a key nobody has, a time
     * range in the future and a topic nobody routes.
     */
    public static Map<String, Object> byKey(Ctx ctx) throws Exception {
        String topic = ctx.name("JQuery");
        ctx.createTopic(topic, 1);
        DefaultMQProducer producer = producer(ctx);
        producer.send(new Message(topic, "TagQ", "qk-1 common", Ctx.bytes("q1")));
        producer.send(new Message(topic, "TagQ", "qk-2 common", Ctx.bytes("q2")));
        producer.send(new Message(topic, "TagQ", "qk-3", Ctx.bytes("q3")));
        Thread.sleep(1000);  // the index is built by the broker's dispatch thread
        long far = Long.MAX_VALUE;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("common", sorted(ctx.admin().queryMessage(topic, "common", 32, 0, far).getMessageList()));
        out.put("producerQk3", attempt(() -> bodies(producer.queryMessage(topic, "qk-3", 32, 0, far))));
        out.put("maxNum1", attempt(() -> bodies(ctx.admin().queryMessage(topic, "common", 1, 0, far))));
        out.put("missingKey", attempt(() -> bodies(ctx.admin().queryMessage(topic, "nobody", 32, 0, far))));
        long future = System.currentTimeMillis() + 3_600_000L;
        out.put("futureRange", attempt(() -> bodies(ctx.admin().queryMessage(topic, "common", 32, future, far))));
        out.put("unknownTopic", attempt(() -> bodies(ctx.admin().queryMessage(ctx.name("JNoTopic"), "k", 32, 0,
            far))));
        return out;
    }

    /**
     * One message looked up by its offset message id and by its unique key (viewMessage with a topic tries the id as
     * an offset id first, then queries the unique key), and ids that find nothing: an offset past the commit log and
     * text that is no id at all.
     */
    public static Map<String, Object> byId(Ctx ctx) throws Exception {
        String topic = ctx.name("JView");
        ctx.createTopic(topic, 1);
        DefaultMQProducer producer = producer(ctx);
        SendResult sent = producer.send(new Message(topic, "TagV", "vk", Ctx.bytes("viewed")));
        Thread.sleep(1000);
        String offsetId = sent.getOffsetMsgId();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("byOffsetId", Ctx.message(ctx.admin().viewMessage(offsetId)));
        out.put("byTopicAndOffsetId", Ctx.message(ctx.admin().viewMessage(topic, offsetId)));
        out.put("byTopicAndUniqKey", Ctx.message(ctx.admin().viewMessage(topic, sent.getMsgId())));
        out.put("producerByOffsetId", Ctx.message(producer.viewMessage(offsetId)));
        // Same store host, offset far past the end of the commit log.
        String pastTheLog = offsetId.substring(0, offsetId.length() - 16) + "00000000FFFFFF00";
        out.put("pastTheLog", attempt(() -> Ctx.message(ctx.admin().viewMessage(pastTheLog))));
        out.put("notAnId", attempt(() -> Ctx.message(ctx.admin().viewMessage("not-an-id"))));
        return out;
    }

    /** One message with a key, for the mqadmin query commands: where it went and its ids. */
    public static Map<String, Object> seed(Ctx ctx) throws Exception {
        String topic = ctx.name("JAdminQuery");
        ctx.createTopic(topic, 1);
        SendResult sent = producer(ctx).send(new Message(topic, "TagA", "admin-key", Ctx.bytes("for-mqadmin")));
        Thread.sleep(1000);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("topic", topic);
        out.put("sent", Ctx.sendResult(sent));
        return out;
    }
}
