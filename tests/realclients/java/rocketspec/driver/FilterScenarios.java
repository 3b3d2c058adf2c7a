package rocketspec.driver;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.broker.filter.MessageEvaluationContext;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.filter.SqlFilter;
import org.apache.rocketmq.filter.expression.Expression;

/** Message filtering by SQL92 (MessageSelector.bySql): the 4.9.8 evaluator itself, and consumers against a broker. */
public final class FilterScenarios {
    private FilterScenarios() {
    }

    /** The 4.9.8 filter module on CASES (a JSON file of {expr, props}): whether each expression compiles (with the
     * compile error's text), what evaluate returns (TRUE, FALSE, NULL, another value's class, or ERROR: the
     * exception class) and whether ExpressionMessageFilter.isMatchedByCommitLog keeps the message. No cluster. */
    public static Map<String, Object> evaluate(Ctx ctx) throws Exception {
        String text = new String(Files.readAllBytes(Paths.get(ctx.str("casesFile"))), StandardCharsets.UTF_8);
        JSONArray cases = JSON.parseArray(text);
        List<Map<String, Object>> results = new ArrayList<>();
        SqlFilter filter = new SqlFilter();
        for (int i = 0; i < cases.size(); i++) {
            JSONObject one = cases.getJSONObject(i);
            Map<String, Object> out = new LinkedHashMap<>();
            Expression compiled;
            try {
                compiled = filter.compile(one.getString("expr"));
            } catch (Throwable e) {
                out.put("compiles", false);
                out.put("error", String.valueOf(e.getMessage()));
                results.add(out);
                continue;
            }
            out.put("compiles", true);
            Map<String, String> props = new HashMap<>();
            JSONObject given = one.getJSONObject("props");
            if (given != null) {
                for (String key : given.keySet()) {
                    props.put(key, given.getString(key));
                }
            }
            Object value;
            String shown;
            try {
                value = compiled.evaluate(new MessageEvaluationContext(props));
                shown = value == null ? "NULL" : value instanceof Boolean ? ((Boolean) value ? "TRUE" : "FALSE")
                    : value.getClass().getSimpleName();
            } catch (Throwable e) {
                value = null;
                shown = "ERROR";
            }
            out.put("value", shown);
            out.put("matches", value instanceof Boolean && (Boolean) value);
            results.add(out);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        return out;
    }

    /** Send MESSAGES ([{body, tags, props}]) to a new topic of 2 queues, one queue per message parity. */
    static String sendAll(Ctx ctx, String prefix) throws Exception {
        String topic = ctx.name(prefix);
        ctx.createTopic(topic, 2);
        DefaultMQProducer producer = ProducerScenarios.started(ctx);
        JSONArray messages = ctx.args.getJSONArray("messages");
        for (int i = 0; i < messages.size(); i++) {
            JSONObject m = messages.getJSONObject(i);
            Message msg = new Message(topic, m.getString("tags"), Ctx.bytes(m.getString("body")));
            JSONObject props = m.getJSONObject("props");
            if (props != null) {
                for (String key : props.keySet()) {
                    msg.putUserProperty(key, props.getString(key));
                }
            }
            final int queue = i % 2;
            producer.send(msg, (mqs, ignored, arg) -> mqs.get(queue % mqs.size()), null);
        }
        return topic;
    }

    /** One push consumer per expression of EXPRESSIONS (groups CG0, CG1, ...): the bodies each receives, or the
     * error its start() throws. EXPECT[i] is how many bodies to wait for (then 1.5 s more for extras). */
    public static Map<String, Object> push(Ctx ctx) throws Exception {
        String topic = sendAll(ctx, "JSql");
        JSONArray expressions = ctx.args.getJSONArray("expressions");
        JSONArray expect = ctx.args.getJSONArray("expect");
        List<List<String>> received = new ArrayList<>();
        List<Object> starts = new ArrayList<>();
        for (int i = 0; i < expressions.size(); i++) {
            List<String> into = Collections.synchronizedList(new ArrayList<>());
            received.add(into);
            DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.name("CG" + i));
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.registerMessageListener(ConsumerScenarios.recorder(into));
            try {
                consumer.subscribe(topic, MessageSelector.bySql(expressions.getString(i)));
                consumer.start();
                ctx.onClose(consumer::shutdown);
                starts.add("started");
            } catch (Exception e) {
                consumer.shutdown();
                starts.add(Ctx.error(e));
            }
        }
        Ctx.await(() -> {
            for (int i = 0; i < received.size(); i++) {
                if (received.get(i).size() < expect.getIntValue(i)) {
                    return false;
                }
            }
            return true;
        }, 30000);
        Thread.sleep(1500);
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> bodies = new ArrayList<>();
        for (List<String> one : received) {
            bodies.add(ConsumerScenarios.sorted(one));
        }
        out.put("start", starts);
        out.put("received", bodies);
        return out;
    }

    /** A subscribing lite pull consumer with bySql(EXPRESSION): what it polls (EXPECT bodies, then 2 more polls),
     * or the error its start() throws. */
    public static Map<String, Object> litePull(Ctx ctx) throws Exception {
        String topic = sendAll(ctx, "JSqlLite");
        int expect = ctx.num("expect", 0);
        DefaultLitePullConsumer consumer = ctx.litePullConsumer(ctx.name("CGL"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPollTimeoutMillis(1000);
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            consumer.subscribe(topic, MessageSelector.bySql(ctx.str("expression")));
            consumer.start();
            ctx.onClose(consumer::shutdown);
        } catch (Exception e) {
            consumer.shutdown();
            out.put("start", Ctx.error(e));
            return out;
        }
        out.put("start", "started");
        List<String> got = new ArrayList<>();
        for (int i = 0; i < 30 && got.size() < expect; i++) {
            for (MessageExt m : consumer.poll()) {
                got.add(ConsumerScenarios.body(m));
            }
        }
        for (int i = 0; i < 2; i++) {
            for (MessageExt m : consumer.poll()) {
                got.add(ConsumerScenarios.body(m));
            }
        }
        out.put("received", ConsumerScenarios.sorted(got));
        return out;
    }

    /** DefaultMQPullConsumer.pull(mq, bySql(e), 0, 32) on queue 0 for each of EXPRESSIONS: the subscription rides
     * in the request (no heartbeat filter data, no CHECK_CLIENT_CONFIG). */
    @SuppressWarnings("deprecation")
    public static Map<String, Object> pull(Ctx ctx) throws Exception {
        String topic = sendAll(ctx, "JSqlPull");
        DefaultMQPullConsumer consumer = ctx.pullConsumer(ctx.name("CGP"));
        consumer.start();
        ctx.onClose(consumer::shutdown);
        List<MessageQueue> queues = new ArrayList<>(consumer.fetchSubscribeMessageQueues(topic));
        queues.sort(null);
        JSONArray expressions = ctx.args.getJSONArray("expressions");
        Map<String, Object> out = new TreeMap<>();
        // The client refuses a non-tag pull to a broker whose version it has not learnt from a heartbeat answer.
        try {
            consumer.pull(queues.get(0), MessageSelector.bySql("TRUE"), 0, 1);
            out.put("beforeHeartbeat", "pulled");
        } catch (Exception e) {
            out.put("beforeHeartbeat", Ctx.error(e));
        }
        MQClientInstance factory = consumer.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory();
        factory.updateTopicRouteInfoFromNameServer(topic);
        factory.sendHeartbeatToAllBrokerWithLock();
        for (int i = 0; i < expressions.size(); i++) {
            String expression = expressions.getString(i);
            List<Object> perQueue = new ArrayList<>();
            for (MessageQueue mq : queues) {
                try {
                    PullResult result = consumer.pull(mq, MessageSelector.bySql(expression), 0, 32);
                    Map<String, Object> one = ConsumerScenarios.describe(result);
                    one.remove("min");
                    one.remove("max");
                    perQueue.add(one);
                } catch (Exception e) {
                    perQueue.add(Ctx.error(e));
                }
            }
            out.put(String.format("q%02d", i), perQueue);
        }
        return out;
    }
}
