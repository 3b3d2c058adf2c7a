#!/usr/bin/env node
'use strict';
/*
 * Drives the real JavaScript RocketMQ client (npm `ali-ons`) against a name server, for
 * tests/test_realclient_js.py.
 *
 *   node driver.js <scenario> --namesrv HOST:PORT --topic T --group G [--count N] [--timeout S]
 *                  [--tag TAG] [--prefix TEXT] [--rebalance-ms MS] [--poll-ms MS]
 *
 * Scenarios:
 *   send     one producer (group G) sends N messages: tag TAG, keys "<prefix>-key-<i>", body "<prefix>-<i>".
 *   consume  one clustering push consumer (group G, subscription "*", the client's default
 *            CONSUME_FROM_LAST_OFFSET) runs until it has handled N messages (N = 0: until "stop" arrives on stdin).
 *            --rebalance-ms and --poll-ms shorten the client's rebalance and route refresh timers (10 s, 30 s).
 *   retry    like consume, but the handler throws on the first delivery of each message (told apart by its keys),
 *            so the client sends it back (CONSUMER_SEND_MSG_BACK) and it comes again from %RETRY%G; ends when N
 *            messages have been handled successfully.
 *
 * Output: one JSON object per line on stdout, each with an "event":
 *   started                      the client is up (consumers: subscribed)
 *   sent      msgId, queue, offset, status, brokerName, tags, keys, body
 *   message   topic, tags, keys, body, queueId, queueOffset, reconsumeTimes, msgId, originMsgId, retryTopic,
 *             action ("ok" or "throw")
 *   queues    the consumer's current queues of the topic, [queueId, ...], after every rebalance that changed them
 *   error     name, code, message (every client 'error' event; the client reports and carries on)
 *   done      count (the scenario finished; the clients were closed)
 *   timeout   count (the scenario did not finish within --timeout seconds)
 *   failed    name, code, message (the scenario threw: e.g. a send failed after the client's own retries)
 * Exit status: 0 done, 1 the scenario failed (a "failed" line says why), 2 bad arguments, 3 timeout.
 * Client logs go to stderr. A line "stop" on stdin ends a consumer scenario early (still exit 0).
 */

const readline = require('readline');

const SCENARIOS = ['send', 'consume', 'retry'];
const USAGE = 'usage: node driver.js {send|consume|retry} --namesrv HOST:PORT --topic T --group G ' +
  '[--count N] [--timeout S] [--tag TAG] [--prefix TEXT] [--rebalance-ms MS] [--poll-ms MS]';
const OPTIONS = {
  namesrv: { required: true },
  topic: { required: true },
  group: { required: true },
  count: { int: true, min: 0, default: 1 },
  timeout: { int: true, min: 1, default: 30 },
  tag: { default: 'TagA' },
  prefix: { default: 'msg' },
  'rebalance-ms': { int: true, min: 100, default: 1000 },
  'poll-ms': { int: true, min: 100, default: 1000 },
};

function usageError(text) {
  process.stderr.write(`driver.js: ${text}\n${USAGE}\n`);
  process.exit(2);
}

/** Parses argv into {scenario, namesrv, topic, ...}; exits with status 2 on anything unexpected. */
function parseArgs(argv) {
  if (!argv.length || argv[0] === '-h' || argv[0] === '--help') {
    usageError('a scenario is required');
  }
  const scenario = argv[0];
  if (!SCENARIOS.includes(scenario)) {
    usageError(`unknown scenario ${JSON.stringify(scenario)} (expected one of ${SCENARIOS.join(', ')})`);
  }
  const args = { scenario };
  for (let i = 1; i < argv.length; i += 2) {
    const flag = argv[i];
    const name = flag.startsWith('--') ? flag.slice(2) : '';
    const spec = OPTIONS[name];
    if (!spec) {
      usageError(`unknown option ${JSON.stringify(flag)}`);
    }
    if (i + 1 >= argv.length) {
      usageError(`option ${flag} needs a value`);
    }
    const text = argv[i + 1];
    let value = text;
    if (spec.int) {
      if (!/^[0-9]+$/.test(text) || Number(text) < spec.min) {
        usageError(`option ${flag} must be an integer >= ${spec.min}, not ${JSON.stringify(text)}`);
      }
      value = Number(text);
    } else if (!text) {
      usageError(`option ${flag} must not be empty`);
    }
    args[name] = value;
  }
  for (const [name, spec] of Object.entries(OPTIONS)) {
    if (args[name] === undefined) {
      if (spec.required) {
        usageError(`option --${name} is required`);
      }
      args[name] = spec.default;
    }
  }
  if (!/^[^:\s]+:[0-9]+$/.test(args.namesrv)) {
    usageError(`--namesrv must be HOST:PORT, not ${JSON.stringify(args.namesrv)}`);
  }
  return args;
}

function emit(event, fields) {
  // Writes to a pipe are synchronous on Linux, so nothing is lost at process.exit.
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n');
}

// The client logs through this object; info/debug are dropped unless RS_DRIVER_VERBOSE is set.
const verbose = !!process.env.RS_DRIVER_VERBOSE;
const logger = {
  info(...args) {
    if (verbose) console.error('[info]', ...args);
  },
  debug() {},
  warn(...args) {
    console.error('[warn]', ...args);
  },
  error(...args) {
    console.error('[error]', ...args);
  },
};

function reportError(err) {
  emit('error', { name: err && err.name, code: err && err.code, message: String(err && err.message || err) });
}

function clientOptions(args) {
  // httpclient is asserted by the client even when nameSrv is given; clientIP pins the client id.
  return { nameSrv: args.namesrv, httpclient: {}, clientIP: '127.0.0.1', logger };
}

async function runSend(args, state) {
  const { Producer, Message } = require('ali-ons');
  const producer = new Producer(Object.assign(clientOptions(args), { producerGroup: args.group }));
  producer.on('error', reportError);
  state.closers.push(() => producer.close());
  await producer.ready();
  emit('started', {});
  for (let i = 0; i < args.count; i++) {
    const body = `${args.prefix}-${i}`;
    const keys = [`${args.prefix}-key-${i}`];
    const msg = new Message(args.topic, args.tag, body);
    msg.keys = keys;
    const result = await producer.send(msg);
    state.count++;
    emit('sent', {
      msgId: result.msgId,
      queue: Number(result.messageQueue.queueId),
      offset: result.queueOffset,
      status: result.sendStatus,
      brokerName: result.messageQueue.brokerName,
      tags: args.tag,
      keys: keys.join(' '),
      body,
    });
  }
}

function messageFields(msg, action) {
  return {
    topic: msg.topic,
    tags: msg.tags,
    keys: msg.keys,
    body: msg.body ? msg.body.toString('utf8') : null,
    queueId: msg.queueId,
    queueOffset: msg.queueOffset,
    reconsumeTimes: msg.reconsumeTimes,
    msgId: msg.msgId,
    originMsgId: msg.originMessageId || null,
    retryTopic: msg.retryTopic || null,
    action,
  };
}

async function runConsume(args, state, failFirst) {
  const { Consumer } = require('ali-ons');
  const consumer = new Consumer(Object.assign(clientOptions(args), {
    consumerGroup: args.group,
    // The client rebalances only on this timer (it ignores NOTIFY_CONSUMER_IDS_CHANGED): 10 s by default.
    rebalanceInterval: args['rebalance-ms'],
    // Routes are refreshed only on this timer (30 s by default); the group's %RETRY% topic has no route until the
    // broker has seen the first heartbeat, so without a refresh the client would not pull retried messages for 30 s.
    pollNameServerInteval: args['poll-ms'],
  }));
  consumer.on('error', reportError);
  state.closers.push(() => consumer.close());

  let finish;
  const finished = new Promise(resolve => {
    finish = resolve;
  });
  const failedOnce = new Set();
  const handled = new Set();
  await consumer.ready();
  consumer.subscribe(args.topic, '*', async msg => {
    const id = msg.keys || msg.msgId;
    if (failFirst && !failedOnce.has(id)) {
      failedOnce.add(id);
      emit('message', messageFields(msg, 'throw'));
      throw new Error(`first delivery of ${id} fails on purpose`);
    }
    emit('message', messageFields(msg, 'ok'));
    handled.add(id);
    state.count = handled.size;
    if (args.count > 0 && handled.size >= args.count) {
      finish();
    }
  });
  let lastQueues = '';
  consumer.on(`topic_${args.topic}_queue_changed`, () => {
    const queues = [];
    for (const { messageQueue } of consumer.processQueueTable.values()) {
      if (messageQueue.topic === args.topic) {
        queues.push(Number(messageQueue.queueId));
      }
    }
    queues.sort((a, b) => a - b);
    if (JSON.stringify(queues) !== lastQueues) {
      lastQueues = JSON.stringify(queues);
      emit('queues', { queues });
    }
  });
  readline.createInterface({ input: process.stdin }).on('line', line => {
    if (line.trim() === 'stop') {
      finish();
    }
  });
  emit('started', {});
  await finished;
  // The client records a queue's new offset only after the handler returned and the message left the process
  // queue; wait for that (bounded) so that closing commits what was handled.
  const drainedBy = Date.now() + 3000;
  while (Date.now() < drainedBy &&
         Array.from(consumer.processQueueTable.values()).some(({ processQueue }) => processQueue.msgCount > 0)) {
    await new Promise(resolve => setTimeout(resolve, 20));
  }
}

async function closeAll(state) {
  // Closing persists the consumer's offsets (oneway UPDATE_CONSUMER_OFFSET) and unregisters the client.
  for (const close of state.closers.reverse()) {
    await close();
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const state = { count: 0, closers: [] };
  setTimeout(() => {
    emit('timeout', { count: state.count });
    process.exit(3);
  }, args.timeout * 1000);
  try {
    if (args.scenario === 'send') {
      await runSend(args, state);
    } else {
      await runConsume(args, state, args.scenario === 'retry');
    }
    await closeAll(state);
  } catch (err) {
    emit('failed', { name: err && err.name, code: err && err.code, message: String(err && err.message || err) });
    process.exit(1);
  }
  emit('done', { count: state.count });
  // The client's timers and its inner producer keep the loop alive: leave explicitly.
  process.exit(0);
}

main();
