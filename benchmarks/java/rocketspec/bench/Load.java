package rocketspec.bench;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

/**
 * One load phase of the official Java client against a name server, for benchmarks/java_client.py.
 *
 * <pre>
 *   java -cp CLASSES:LIB/* rocketspec.bench.Load NAMESRV send    TOPIC THREADS COUNT SIZE WARMUP GROUP
 *   java -cp CLASSES:LIB/* rocketspec.bench.Load NAMESRV consume TOPIC THREADS COUNT SIZE 0      GROUP
 * </pre>
 *
 * send: WARMUP sync sends from one thread (not timed: route lookup, connections, JIT on both sides), then COUNT sync
 * sends of SIZE-byte bodies shared by THREADS threads; a send that does not answer SEND_OK counts as failed.
 * consume: a push consumer of a new group (from the first offset, THREADS consume threads) until COUNT messages
 * arrived, timed from its start. Prints one JSON line: messages, failed, seconds, per_second.
 */
public final class Load {
    private static final long PATIENCE_S = 300;

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: Load NAMESRV send|consume TOPIC THREADS COUNT SIZE WARMUP GROUP");
            System.exit(2);
        }
        String namesrv = args[0];
        String mode = args[1];
        String topic = args[2];
        int threads = Integer.parseInt(args[3]);
        int count = Integer.parseInt(args[4]);
        int size = Integer.parseInt(args[5]);
        int warmup = Integer.parseInt(args[6]);
        String group = args[7];
        long[] result = "send".equals(mode)
            ? send(namesrv, topic, threads, count, size, warmup, group)
            : consume(namesrv, topic, threads, count, group);
        double seconds = result[1] / 1e9;
        System.out.printf("{\"mode\": \"%s\", \"threads\": %d, \"messages\": %d, \"failed\": %d, \"seconds\": %.3f,"
            + " \"per_second\": %.1f}%n", mode, threads, count, result[0], seconds, count / seconds);
        System.exit(0);
    }

    private static long[] send(String namesrv, String topic, int threads, int count, int size, int warmup,
                               String group) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setVipChannelEnabled(false);
        producer.setSendMsgTimeout(10_000);
        producer.start();
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = (byte) ('a' + i % 26);
        }
        for (int i = 0; i < warmup; i++) {
            producer.send(new Message(topic, body));
        }
        AtomicInteger left = new AtomicInteger(count);
        AtomicLong failed = new AtomicLong();
        Thread[] workers = new Thread[threads];
        long started = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            workers[t] = new Thread(() -> {
                while (left.getAndDecrement() > 0) {
                    try {
                        SendResult sent = producer.send(new Message(topic, body));
                        if (sent.getSendStatus() != SendStatus.SEND_OK) {
                            failed.incrementAndGet();
                        }
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    }
                }
            });
            workers[t].start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        long elapsed = System.nanoTime() - started;
        producer.shutdown();
        return new long[] {failed.get(), elapsed};
    }

    private static long[] consume(String namesrv, String topic, int threads, int count, String group)
            throws Exception {
        CountDownLatch all = new CountDownLatch(count);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setVipChannelEnabled(false);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(threads);
        consumer.setConsumeThreadMax(threads);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (int i = 0; i < messages.size(); i++) {
                all.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long started = System.nanoTime();
        consumer.start();
        boolean done = all.await(PATIENCE_S, TimeUnit.SECONDS);
        long elapsed = System.nanoTime() - started;
        consumer.shutdown();
        if (!done) {
            System.err.println("consumed " + (count - all.getCount()) + " of " + count + " messages in " + PATIENCE_S
                + " s");
            System.exit(1);
        }
        return new long[] {0, elapsed};
    }
}
