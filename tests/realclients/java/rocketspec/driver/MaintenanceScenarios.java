package rocketspec.driver;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.PlainAccessConfig;
import org.apache.rocketmq.common.admin.TopicOffset;
import org.apache.rocketmq.common.admin.TopicStatsTable;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.BrokerStatsData;
import org.apache.rocketmq.common.protocol.body.BrokerStatsItem;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.header.QueryConsumerOffsetRequestHeader;
import org.apache.rocketmq.common.protocol.header.UpdateConsumerOffsetRequestHeader;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** The maintenance admin requests (admin_maintenance.py): DefaultMQAdminExt / MQClientAPIImpl calls, and raw
 * requests with chosen header fields (bad input) whose code, remark and body are reported as the broker sent them. */
public final class MaintenanceScenarios {
    private MaintenanceScenarios() {
    }

    interface Call {
        Object call() throws Exception;
    }

    static Object attempt(Call call) {
        try {
            return call.call();
        } catch (Throwable e) {
            return Ctx.error(e);
        }
    }

    /** A map with its keys as strings (fastjson prints Integer keys bare, which is not JSON). */
    static Map<String, Object> keyed(Map<?, ?> map) {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            out.put(String.valueOf(e.getKey()), e.getValue());
        }
        return out;
    }

    static Map<String, Object> item(BrokerStatsItem it) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sum", it.getSum());
        out.put("tps", it.getTps());
        out.put("avgpt", it.getAvgpt());
        return out;
    }

    static Map<String, Object> stats(BrokerStatsData data) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("minute", item(data.getStatsMinute()));
        out.put("hour", item(data.getStatsHour()));
        out.put("day", item(data.getStatsDay()));
        return out;
    }

    /** The minute snapshot of a stats item once its sum reached WANT (sampled every 10 s), or what it was. */
    static Object awaitStats(DefaultMQAdminExt admin, String addr, String name, String key, long want)
        throws InterruptedException {
        final Object[] last = new Object[1];
        Ctx.await(() -> {
            try {
                BrokerStatsData data = admin.viewBrokerStatsData(addr, name, key);
                last[0] = stats(data);
                return data.getStatsMinute().getSum() >= want;
            } catch (Exception e) {
                last[0] = Ctx.error(e);
                return false;
            }
        }, 25000);
        return last[0];
    }

    /** Raw requests: args "requests" = [{broker, code, fields, timeoutMs}]; each answer's code, remark and body
     * (JSON when it parses), or the exception (a request never answered times out). */
    public static Map<String, Object> raw(Ctx ctx) throws Exception {
        Map<String, String> masters = ctx.masters();
        NettyRemotingClient client = new NettyRemotingClient(new NettyClientConfig());
        client.start();
        ctx.onClose(client::shutdown);
        JSONArray requests = ctx.args.getJSONArray("requests");
        List<Object> results = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            JSONObject spec = requests.getJSONObject(i);
            RemotingCommand request = RemotingCommand.createRequestCommand(spec.getIntValue("code"), null);
            JSONObject fields = spec.getJSONObject("fields");
            if (fields != null) {
                for (String key : new TreeMap<>(fields).keySet()) {
                    request.addExtField(key, fields.getString(key));
                }
            }
            String addr = masters.get(spec.getString("broker") == null ? "broker-a" : spec.getString("broker"));
            long timeout = spec.containsKey("timeoutMs") ? spec.getLongValue("timeoutMs") : 5000;
            Map<String, Object> out = new LinkedHashMap<>();
            try {
                RemotingCommand response = client.invokeSync(addr, request, timeout);
                out.put("code", response.getCode());
                out.put("remark", response.getRemark());
                byte[] body = response.getBody();
                if (body != null) {
                    String text = new String(body, StandardCharsets.UTF_8);
                    Object parsed;
                    try {
                        parsed = JSON.parse(text);
                    } catch (RuntimeException e) {
                        parsed = text;
                    }
                    out.put("body", parsed instanceof Map ? keyed((Map<?, ?>) parsed) : parsed);
                }
            } catch (Exception e) {
                out.put("exception", e.getClass().getSimpleName());
            }
            results.add(out);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        return out;
    }

    /** Sends and a pull on broker-a queue 0, then the producer table, the stats of that traffic, correction
     * offsets, a half message's check resumed, the store upkeep requests and the ACL requests. */
    public static Map<String, Object> flow(Ctx ctx) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        DefaultMQAdminExt admin = ctx.admin();
        String addr = ctx.masters().get("broker-a");
        String addrB = ctx.masters().get("broker-b");
        String topic = ctx.name("MntTopic");
        ctx.createTopic(topic, 2);
        MessageQueue mq = new MessageQueue(topic, "broker-a", 0);

        String pgroup = ctx.name("MntProducer");
        DefaultMQProducer producer = ctx.producer(pgroup);
        producer.start();
        ctx.onClose(producer::shutdown);
        // The producer routes by its own copy of the route: wait until it knows broker-a's queues.
        Ctx.awaitTrue(() -> {
            try {
                return producer.fetchPublishMessageQueues(topic).contains(mq);
            } catch (Exception e) {
                return false;
            }
        }, 15000, "publish route of " + topic);
        for (int i = 0; i < 3; i++) {
            producer.send(new Message(topic, "TagA", Ctx.bytes("single-" + i)), mq);
        }
        producer.send(Arrays.asList(new Message(topic, "TagB", Ctx.bytes("batch-0")),
            new Message(topic, "TagB", Ctx.bytes("batch-1"))), mq);

        producer.getDefaultMQProducerImpl().getmQClientFactory().sendHeartbeatToAllBrokerWithLock();
        // The producer table: 4.9.8's client cannot decode it (ProducerTableInfo has no default constructor), so
        // the call fails on the client; the body is read raw.
        out.put("producerInfoCall", attempt(() -> admin.getAllProducerInfo(addr).getData().size()));
        MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
        RemotingCommand tableResponse = api.getRemotingClient().invokeSync(addr,
            RemotingCommand.createRequestCommand(RequestCode.GET_ALL_PRODUCER_INFO, null), 5000);
        out.put("producerInfoCode", tableResponse.getCode());
        JSONObject data = JSON.parseObject(new String(tableResponse.getBody(), StandardCharsets.UTF_8))
            .getJSONObject("data");
        List<Object> mine = new ArrayList<>();
        JSONArray rows = data.getJSONArray(pgroup);
        for (int i = 0; rows != null && i < rows.size(); i++) {
            JSONObject info = rows.getJSONObject(i);
            Map<String, Object> row = new TreeMap<>(info);
            row.put("clientId", info.getString("clientId").equals(producer.buildMQClientId()));
            row.put("remoteIP", info.getString("remoteIP").replaceAll("\\d+", "N"));
            row.put("lastUpdateTimestamp", info.getLongValue("lastUpdateTimestamp") > 0);
            mine.add(row);
        }
        out.put("producerInfo", mine);
        out.put("innerProducerListed", data.containsKey("CLIENT_INNER_PRODUCER"));

        // A pull of everything for a group.
        String cgroup = ctx.name("MntConsumer");
        DefaultMQPullConsumer pull = ctx.pullConsumer(cgroup);
        pull.start();
        ctx.onClose(pull::shutdown);
        PullResult pulled = pull.pull(mq, "*", 0, 32);
        out.put("pulled", pulled.getMsgFoundList() == null ? 0 : pulled.getMsgFoundList().size());

        // Stats of that traffic (sampled every 10 s: wait for the sample that includes it).
        out.put("topicPutNums", awaitStats(admin, addr, "TOPIC_PUT_NUMS", topic, 5));
        out.put("topicPutSize", attempt(() -> stats(admin.viewBrokerStatsData(addr, "TOPIC_PUT_SIZE", topic))));
        out.put("groupGetNums", awaitStats(admin, addr, "GROUP_GET_NUMS", topic + "@" + cgroup, 5));
        out.put("groupGetSize", attempt(() -> stats(admin.viewBrokerStatsData(addr, "GROUP_GET_SIZE",
            topic + "@" + cgroup))));
        out.put("groupGetLatencyTimes", attempt(() -> admin.viewBrokerStatsData(addr, "GROUP_GET_LATENCY",
            "0@" + topic + "@" + cgroup).getStatsMinute().getSum() >= 0));
        out.put("groupGetLatencyByTopic", attempt(() -> admin.viewBrokerStatsData(addr, "GROUP_GET_LATENCY",
            topic + "@" + cgroup) != null));
        out.put("brokerPutNums", attempt(() -> stats(admin.viewBrokerStatsData(addr, "BROKER_PUT_NUMS",
            "DefaultCluster"))));
        out.put("unknownKey", attempt(() -> admin.viewBrokerStatsData(addr, "TOPIC_PUT_NUMS", topic + "-none")));
        out.put("unknownName", attempt(() -> admin.viewBrokerStatsData(addr, "NO_SUCH_STATS", topic)));

        // Correction offsets: G1 at 3 and G2 at 1 on queue 0.
        String g1 = ctx.name("MntG1");
        String g2 = ctx.name("MntG2");
        for (Object[] commit : new Object[][] {{g1, 3L}, {g2, 1L}}) {
            UpdateConsumerOffsetRequestHeader header = new UpdateConsumerOffsetRequestHeader();
            header.setConsumerGroup((String) commit[0]);
            header.setTopic(topic);
            header.setQueueId(0);
            header.setCommitOffset((Long) commit[1]);
            api.updateConsumerOffset(addr, header, 5000);
        }
        if (addrB != null) {
            // G1 consumes on broker-b too, so queryTopicConsumeByWho (asked of one broker, in route order) finds it.
            UpdateConsumerOffsetRequestHeader header = new UpdateConsumerOffsetRequestHeader();
            header.setConsumerGroup(g1);
            header.setTopic(topic);
            header.setQueueId(0);
            header.setCommitOffset(0L);
            api.updateConsumerOffset(addrB, header, 5000);
        }
        out.put("correction", attempt(() -> keyed(api.queryCorrectionOffset(addr, topic, g1, null, 5000))));
        out.put("correctionFiltered", attempt(() -> keyed(api.queryCorrectionOffset(addr, topic, g1,
            Collections.singleton(g2), 5000))));
        for (String group : new String[] {g1, g2}) {
            QueryConsumerOffsetRequestHeader header = new QueryConsumerOffsetRequestHeader();
            header.setConsumerGroup(group);
            header.setTopic(topic);
            header.setQueueId(0);
            out.put(group.equals(g1) ? "g1AfterFilter" : "g2AfterFilter",
                attempt(() -> api.queryConsumerOffset(addr, header, 5000)));
        }

        // A half message whose check is resumed.
        TransactionMQProducer tx = ctx.transactionProducer(ctx.name("MntTx"));
        tx.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return LocalTransactionState.UNKNOW;
            }
        });
        tx.start();
        ctx.onClose(tx::shutdown);
        SendResult half = tx.sendMessageInTransaction(new Message(topic, "TagT", Ctx.bytes("half")), null);
        // TransactionSendResult has no offset id in 4.9.8: find the half message by its unique key.
        MessageExt stored = null;
        for (int i = 0; i < 50 && stored == null; i++) {
            try {
                stored = admin.viewMessage("RMQ_SYS_TRANS_HALF_TOPIC", half.getMsgId());
            } catch (Exception e) {
                Thread.sleep(200);
            }
        }
        String halfId = stored == null ? "none" : ((org.apache.rocketmq.common.message.MessageClientExt) stored)
            .getOffsetMsgId();
        out.put("halfFound", stored != null);
        out.put("resumeHalf", attempt(() -> admin.resumeCheckHalfMessage(halfId)));
        out.put("resumeHalfWire", attempt(() -> {
            RemotingCommand request = RemotingCommand.createRequestCommand(RequestCode.RESUME_CHECK_HALF_MESSAGE, null);
            request.addExtField("msgId", halfId);
            // To the broker that stores it (the producer picked a queue of either), as admin.resumeCheckHalfMessage
            // finds it from the offset message id.
            java.net.InetSocketAddress at = (java.net.InetSocketAddress)
                org.apache.rocketmq.common.message.MessageDecoder.decodeMessageId(halfId).getAddress();
            String halfBroker = at.getAddress().getHostAddress() + ":" + at.getPort();
            RemotingCommand response = api.getRemotingClient().invokeSync(halfBroker, request, 5000);
            return response.getCode() + " " + response.getRemark();
        }));
        out.put("resumeBadId", attempt(() -> api.resumeCheckHalfMessage(addr, "NOT-AN-ID", 5000)));

        // Store upkeep: answered at once; nothing of this young data goes.
        out.put("cleanExpiredCQ", attempt(() -> admin.cleanExpiredConsumerQueueByAddr(addr)));
        out.put("deleteExpiredCommitLog", attempt(() -> admin.deleteExpiredCommitLogByAddr(addr)));
        out.put("cleanUnusedTopic", attempt(() -> admin.cleanUnusedTopicByAddr(addr)));
        TopicStatsTable after = admin.examineTopicStats(topic);
        TopicOffset offsets = after.getOffsetTable().get(mq);
        out.put("queueAfterUpkeep", offsets.getMinOffset() + ".." + offsets.getMaxOffset());

        // ACL requests of a broker with aclEnable=false.
        PlainAccessConfig config = new PlainAccessConfig();
        config.setAccessKey("RocketMQ");
        config.setSecretKey("12345678");
        out.put("aclUpdate", attempt(() -> {
            admin.createAndUpdatePlainAccessConfig(addr, config);
            return "ok";
        }));
        out.put("aclDelete", attempt(() -> {
            admin.deletePlainAccessConfig(addr, "RocketMQ");
            return "ok";
        }));
        out.put("aclWhiteAddrs", attempt(() -> {
            admin.updateGlobalWhiteAddrConfig(addr, "10.10.10.10");
            return "ok";
        }));
        out.put("aclVersion", attempt(() -> admin.examineBrokerClusterAclVersionInfo(addr)));
        return out;
    }
}
