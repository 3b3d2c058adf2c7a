package rocketspec.driver;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;

/** Producers: sync, async, oneway, batch, orderly sends. */
public final class ProducerScenarios {
    private ProducerScenarios() {
    }

    public static Map<String, Object> syncSend(Ctx ctx) throws Exception {
        String topic = ctx.name("JSync");
        ctx.createTopic(topic, 4);
        DefaultMQProducer producer = ctx.producer(ctx.name("PG"));
        producer.start();
        ctx.onClose(producer::shutdown);
        List<Object> results = new ArrayList<>();
        for (int i = 0; i < ctx.num("count", 4); i++) {
            Message msg = new Message(topic, "TagA", "key-" + i, Ctx.bytes("body-" + i));
            results.add(Ctx.sendResult(producer.send(msg)));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("results", results);
        return out;
    }
}
