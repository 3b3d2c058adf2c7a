#!/usr/bin/env node
'use strict';
/*
 * Client conformance driver for the JavaScript RocketMQ client ali-ons 3.12.0 (npm `ali-ons`).
 *
 *   npm ci --prefix <dir of this file>        (installs the locked client next to the driver)
 *   rocketspec conformance client --exec "node <dir>/driver.js"
 *
 * One process per client, configured by the ROCKETSPEC_* environment of the driver contract (docs/conformance.md),
 * printing one JSON object per line on stdout; the client's logs (and anything else) go to stderr.
 *
 * What ali-ons can be asked for:
 *   producer              sync sends only (await producer.send(): one request/response per attempt);
 *                         ROCKETSPEC_RETRIES -> retryTimesWhenSendFailed, ROCKETSPEC_SEND_TIMEOUT_MS -> sendMsgTimeout.
 *                         async and oneway sends and sendLatencyFaultEnable are unsupported (the client has none).
 *   consumer              push consumer, clustering or broadcasting, concurrent listener, consume from first/last;
 *                         a "later" answer is an error thrown by the listener (the client sends the message
 *                         back; its ACTION_RETRY is lost for %RETRY% messages). Orderly
 *                         listeners are unsupported (the client has no LOCK_BATCH_MQ).
 *                         The client rebalances only on its timer (it ignores NOTIFY_CONSUMER_IDS_CHANGED) and
 *                         refreshes routes only on its timer (30 s by default): the driver sets both to
 *                         ROCKETSPEC_ONS_REBALANCE_MS / ROCKETSPEC_ONS_POLL_MS, default 1000 ms, so that cases
 *                         budgeted in seconds see a rebalance and the %RETRY% route.
 *   transaction-producer  unsupported (the client has no transaction producer).
 *
 * SIGTERM closes the clients (persisting offsets, unregistering; bounded at 7 s) and exits 0.
 * Exit status: 0 done or stopped, 1 the client failed to start, 2 a bad environment, 3 unsupported.
 */

const fs = require('fs');

const EXIT_START_FAILED = 1;
const EXIT_BAD_ENV = 2;
const EXIT_UNSUPPORTED = 3;
const CLOSE_BUDGET_MS = 7000;

// stdout carries the JSON lines only: whatever logs through console.log/info/debug goes to stderr.
for (const name of ['log', 'info', 'debug']) {
  console[name] = (...args) => console.error(...args);
}

function emit(event, fields) {
  fs.writeSync(1, JSON.stringify(Object.assign({ event }, fields || {})) + '\n');
}

function note(text) {
  process.stderr.write(`ons-driver: ${text}\n`);
}

function oneLine(err) {
  const text = String((err && err.message) || err || 'error').replace(/\s+/g, ' ').trim();
  return text || 'error';
}

function unsupported(reason) {
  emit('unsupported', { reason });
  process.exit(EXIT_UNSUPPORTED);
}

class BadEnvironment extends Error {}

/** What the listener throws for RECONSUME_LATER (the client sends the message back). */
class ReconsumeLater extends Error {
  constructor(msgId) {
    super(`reconsume later: ${msgId}`);
    this.name = 'ReconsumeLater';
  }
}

function readConfig(env) {
  const need = name => {
    const value = env[name] || '';
    if (!value) {
      throw new BadEnvironment(`${name} is not set`);
    }
    return value;
  };
  const choice = (name, fallback, allowed) => {
    const value = (env[name] || '').trim().toLowerCase() || fallback;
    if (!allowed.includes(value)) {
      throw new BadEnvironment(`${name} must be one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`);
    }
    return value;
  };
  const integer = (name, fallback, minimum) => {
    const text = (env[name] || '').trim();
    if (!text) {
      return fallback;
    }
    if (!/^-?[0-9]+$/.test(text) || Number(text) < minimum) {
      throw new BadEnvironment(`${name} must be an integer >= ${minimum}, not ${JSON.stringify(text)}`);
    }
    return Number(text);
  };
  return {
    namesrv: need('ROCKETSPEC_NAMESRV'),
    case: env.ROCKETSPEC_CASE || '',
    role: choice('ROCKETSPEC_ROLE', '', ['producer', 'consumer', 'transaction-producer']),
    topic: need('ROCKETSPEC_TOPIC'),
    group: need('ROCKETSPEC_GROUP'),
    count: integer('ROCKETSPEC_COUNT', 0, 0),
    instance: env.ROCKETSPEC_INSTANCE || `ons-${process.pid}`,
    sendMode: choice('ROCKETSPEC_SEND_MODE', 'sync', ['sync', 'async', 'oneway']),
    sendTimeoutMs: integer('ROCKETSPEC_SEND_TIMEOUT_MS', 3000, 1),
    retries: integer('ROCKETSPEC_RETRIES', 2, 0),
    latencyFault: choice('ROCKETSPEC_LATENCY_FAULT', 'false', ['true', 'false']) === 'true',
    tags: env.ROCKETSPEC_TAGS || '',
    subscription: env.ROCKETSPEC_SUBSCRIPTION || '*',
    model: choice('ROCKETSPEC_MESSAGE_MODEL', 'clustering', ['clustering', 'broadcasting']),
    orderly: choice('ROCKETSPEC_ORDERLY', 'false', ['true', 'false']) === 'true',
    consumeFrom: choice('ROCKETSPEC_CONSUME_FROM', 'last', ['first', 'last']),
    consumeResult: choice('ROCKETSPEC_CONSUME_RESULT', 'success', ['success', 'later', 'later-once']),
    rebalanceMs: integer('ROCKETSPEC_ONS_REBALANCE_MS', 1000, 100),
    pollMs: integer('ROCKETSPEC_ONS_POLL_MS', 1000, 100),
  };
}

const logger = {
  info(...args) {
    if (process.env.ROCKETSPEC_ONS_VERBOSE) console.error('[info]', ...args);
  },
  debug() {},
  warn(...args) {
    console.error('[warn]', ...args);
  },
  error(...args) {
    console.error('[error]', ...args);
  },
};

function clientOptions(config) {
  // httpclient is asserted by the client even when nameSrv is given; clientIP and instanceName make the client id.
  return { nameSrv: config.namesrv, httpclient: {}, clientIP: '127.0.0.1', instanceName: config.instance, logger };
}

const state = { stopping: false, closers: [], onStop: [] };

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

async function closeAll() {
  // Closing persists a consumer's offsets (UPDATE_CONSUMER_OFFSET) and unregisters the client at every broker.
  for (const close of state.closers.reverse()) {
    try {
      await close();
    } catch (err) {
      note(`close failed: ${oneLine(err)}`);
    }
  }
}

async function stopAndExit(code) {
  const budget = sleep(CLOSE_BUDGET_MS).then(() => note(`closing did not finish within ${CLOSE_BUDGET_MS} ms`));
  await Promise.race([closeAll(), budget]);
  process.exit(code);
}

process.on('SIGTERM', () => {
  if (!state.stopping) {
    state.stopping = true;
    for (const wake of state.onStop) {
      wake();
    }
    stopAndExit(0);
  }
});
process.on('SIGINT', () => process.emit('SIGTERM'));
process.on('unhandledRejection', err => note(`unhandled rejection: ${oneLine(err)}`));

async function runProducer(config) {
  if (config.sendMode !== 'sync') {
    unsupported(`ali-ons has no ${config.sendMode} send: its only send is awaited request/response (sync)`);
  }
  if (config.latencyFault) {
    unsupported('ali-ons has no latency fault tolerance (sendLatencyFaultEnable)');
  }
  const { Producer, Message } = require('ali-ons');
  const producer = new Producer(Object.assign(clientOptions(config), {
    producerGroup: config.group,
    sendMsgTimeout: config.sendTimeoutMs,
    retryTimesWhenSendFailed: config.retries,
  }));
  producer.on('error', err => note(`client error: ${oneLine(err)}`));
  state.closers.push(() => producer.close());
  try {
    await producer.ready();
  } catch (err) {
    note(`producer start failed: ${oneLine(err)}`);
    process.exit(EXIT_START_FAILED);
  }
  emit('started');
  for (let index = 0; index < config.count; index++) {
    if (state.stopping) {
      return;
    }
    const msg = new Message(config.topic, config.tags || null, `${config.topic}-${index}`);
    msg.keys = [`key-${index}`];
    try {
      const result = await producer.send(msg);
      emit('send', {
        index,
        ok: true,
        status: result.sendStatus,
        msgId: result.msgId,
        broker: result.messageQueue.brokerName,
        queueId: Number(result.messageQueue.queueId),
        queueOffset: Number(result.queueOffset),
      });
    } catch (err) {
      emit('send', { index, ok: false, error: oneLine(err) });
    }
  }
  if (!state.stopping) {
    emit('done');
    state.stopping = true;
    await stopAndExit(0);
  }
}

async function runConsumer(config) {
  if (config.orderly) {
    unsupported('ali-ons has no orderly listener (it never locks queues with LOCK_BATCH_MQ)');
  }
  const { Consumer } = require('ali-ons');
  const ConsumeFromWhere = require('ali-ons/lib/consumer/consume_from_where');
  const consumer = new Consumer(Object.assign(clientOptions(config), {
    consumerGroup: config.group,
    isBroadcast: config.model === 'broadcasting',
    consumeFromWhere: config.consumeFrom === 'first' ?
      ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET : ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    rebalanceInterval: config.rebalanceMs,
    pollNameServerInteval: config.pollMs,
  }));
  consumer.on('error', err => {
    if (!String(err && err.message).includes('reconsume later')) {
      note(`client error: ${oneLine(err)}`);
    }
  });
  state.closers.push(() => consumer.close());
  try {
    await consumer.ready();
  } catch (err) {
    note(`consumer start failed: ${oneLine(err)}`);
    process.exit(EXIT_START_FAILED);
  }

  // The broker of a delivery: its queue's, or (retried messages reach the handler without their queue) the broker
  // whose address stored it, from the client's own broker table.
  const brokerOf = (msg, mq) => {
    if (mq && mq.brokerName) {
      return mq.brokerName;
    }
    const table = consumer._mqClient && consumer._mqClient._brokerAddrTable;
    if (table && msg.storeHost) {
      for (const [name, addrs] of table) {
        if (Object.values(addrs || {}).includes(msg.storeHost)) {
          return name;
        }
      }
    }
    return null;
  };
  const seen = new Set();
  let delivered = 0;
  consumer.subscribe(config.topic, config.subscription, async (msg, mq) => {
    const props = msg.properties || {};
    const msgId = props.UNIQ_KEY || msg.msgId;
    const body = msg.body ? msg.body.toString('utf8') : '';
    // A retry copy without UNIQ_KEY has an id of its own: it is told by the id of the message it copies.
    const identity = `${props.UNIQ_KEY || msg.originMessageId || msg.msgId}\u0000${msg.bornTimestamp}\u0000${body}`;
    const first = !seen.has(identity);
    seen.add(identity);
    emit('received', {
      msgId,
      topic: msg.topic,
      broker: brokerOf(msg, mq),
      queueId: Number(msg.queueId),
      queueOffset: Number(msg.queueOffset),
      reconsumeTimes: Number(msg.reconsumeTimes),
      body,
    });
    delivered += 1;
    if (config.count > 0 && delivered === config.count) {
      emit('done');
    }
    if (config.consumeResult === 'later' || (config.consumeResult === 'later-once' && first)) {
      // Thrown, not Consumer.ACTION_RETRY: the client's handler for %RETRY% messages drops the returned value.
      throw new ReconsumeLater(msgId);
    }
    return undefined;
  });
  emit('started');
  await new Promise(resolve => state.onStop.push(resolve));
}

async function main() {
  let config;
  try {
    config = readConfig(process.env);
  } catch (err) {
    if (err instanceof BadEnvironment) {
      note(`bad environment: ${err.message}`);
      process.exit(EXIT_BAD_ENV);
    }
    throw err;
  }
  if (config.role === 'transaction-producer') {
    unsupported('ali-ons has no transaction producer');
  }
  try {
    require.resolve('ali-ons');
  } catch (err) {
    note(`ali-ons is not installed next to the driver: run npm ci --prefix ${__dirname}`);
    process.exit(EXIT_START_FAILED);
  }
  if (config.role === 'producer') {
    await runProducer(config);
  } else {
    await runConsumer(config);
  }
}

main().catch(err => {
  note(`driver failed: ${err && err.stack || err}`);
  process.exit(EXIT_START_FAILED);
});
