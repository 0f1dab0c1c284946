// kafkajs 2.2.4 against a kafkalab broker: admin calls, keyed records with headers and explicit timestamps
// (plain and gzip), read back by a consumer group, offsets for times, a two-member group (rebalance, commit,
// leave, resume). Prints one JSON document for
// tests/broker/test_broker_kafkajs.py to assert on.  Usage: node kafkajs_check.js HOST:PORT TOPIC
'use strict'
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')
const { GROUP_TIMEOUTS, until } = require('./kafkajs_helpers')

const [bootstrap, topic] = process.argv.slice(2)
const BASE_TS = 1700000000000
const kafka = new Kafka({ clientId: 'kafkajs-check', brokers: [bootstrap], logLevel: logLevel.NOTHING,
  retry: { retries: 2, initialRetryTime: 50 } })

async function admin() {
  const a = kafka.admin()
  await a.connect()
  const out = {}
  out.created = await a.createTopics({ topics: [{ topic: 'js-admin', numPartitions: 2,
    configEntries: [{ name: 'retention.ms', value: '3600000' }] }], waitForLeaders: true })
  try {
    await a.createTopics({ topics: [{ topic: 'bad name', numPartitions: 1 }] })
    out.badName = 'accepted'
  } catch (e) { out.badName = (e.errors && e.errors[0] && e.errors[0].type) || e.type || e.name }
  await a.createPartitions({ topicPartitions: [{ topic: 'js-admin', count: 4 }] })
  const meta = await a.fetchTopicMetadata({ topics: ['js-admin'] })
  out.partitions = meta.topics[0].partitions.length
  await a.alterConfigs({ resources: [{ type: 2, name: 'js-admin',
    configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] })
  const described = await a.describeConfigs({ includeSynonyms: false,
    resources: [{ type: 2, name: 'js-admin', configNames: ['cleanup.policy', 'retention.ms'] }] })
  out.configs = Object.fromEntries(described.resources[0].configEntries.map(c => [c.configName,
    [c.configValue, c.isDefault]]))
  await a.deleteTopics({ topics: ['js-admin'] })
  out.topicsAfterDelete = (await a.listTopics()).sort()
  await a.disconnect()
  return out
}

async function produce() {
  const p = kafka.producer({ allowAutoTopicCreation: false })
  await p.connect()
  const messages = partition => [...Array(10).keys()].map(i => ({ key: `key-${partition}-${i}`,
    value: `value-${partition}-${i}`, partition, timestamp: String(BASE_TS + 1000 * i),
    headers: { h: `${i}`, source: 'kafkajs' } }))
  const plain = await p.send({ topic, messages: messages(0) })
  const gzip = await p.send({ topic, compression: CompressionTypes.GZIP, messages: messages(1) })
  await p.disconnect()
  return { plain: plain.map(r => [r.partition, r.errorCode, r.baseOffset]),
           gzip: gzip.map(r => [r.partition, r.errorCode, r.baseOffset]) }
}

async function readBack() {
  // kafkajs has no assign(): reading goes through a group that subscribes from the beginning.
  const consumer = kafka.consumer({ groupId: 'kafkajs-read', ...GROUP_TIMEOUTS })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const out = { 0: [], 1: [] }
  await consumer.run({ eachMessage: async ({ partition, message: m }) => {
    out[partition].push({ offset: m.offset, key: m.key.toString(), value: m.value.toString(), timestamp: m.timestamp,
      headers: Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, v.toString()])) })
  } })
  await until(() => out[0].length + out[1].length >= 20, 'the 20 records')
  await consumer.disconnect()
  for (const p of [0, 1]) out[p].sort((x, y) => Number(x.offset) - Number(y.offset))
  return out
}

async function groups() {
  // Two members share a 4-partition topic, commit, one leaves, a new member resumes from the committed offsets.
  const groupTopic = 'js-groups'
  const a = kafka.admin()
  await a.connect()
  await a.createTopics({ topics: [{ topic: groupTopic, numPartitions: 4 }], waitForLeaders: true })
  await a.disconnect()
  const p = kafka.producer()
  await p.connect()
  const fill = (from, count) => p.send({ topic: groupTopic, messages: [0, 1, 2, 3].flatMap(partition =>
    [...Array(count).keys()].map(i => ({ partition, value: `${partition}-${from + i}` }))) })
  await fill(0, 5)
  const assigned = {}
  const seen = {}
  const member = async name => {
    const c = kafka.consumer({ groupId: 'kafkajs-group', ...GROUP_TIMEOUTS })
    c.on(c.events.GROUP_JOIN, e => { assigned[name] = (e.payload.memberAssignment[groupTopic] || []).slice().sort() })
    await c.connect()
    await c.subscribe({ topic: groupTopic, fromBeginning: true })
    seen[name] = []
    await c.run({ eachMessage: async ({ partition, message }) => { seen[name].push([partition, Number(message.offset)]) } })
    return c
  }
  const first = await member('a')
  const second = await member('b')
  const total = () => new Set([...seen.a, ...seen.b].map(String)).size
  await until(() => assigned.a && assigned.b && assigned.a.length && assigned.b.length &&
    new Set([...assigned.a, ...assigned.b]).size === 4 && assigned.a.length + assigned.b.length === 4 && total() === 20,
  'two members sharing the partitions')
  const assignments = [assigned.a, assigned.b]
  await second.disconnect()                      // commits what it consumed, then leaves the group
  await until(() => assigned.a.length === 4, 'the remaining member taking every partition')
  const afterLeave = assigned.a
  await first.disconnect()
  await fill(5, 1)
  const third = await member('c')
  await until(() => new Set(seen.c.map(([partition]) => partition)).size === 4, 'a new member resuming')
  await third.disconnect()
  await p.disconnect()
  const resumed = {}
  for (const [partition, offset] of seen.c) resumed[partition] = Math.min(offset, resumed[partition] ?? offset)
  return { assignments, afterLeave, resumed }
}

async function idempotent() {
  // An idempotent producer (InitProducerId, sequence numbers), read back through a group.
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await p.connect()
  const sent = await p.send({ topic: 'js-idempotent', acks: -1,
    messages: [...Array(5).keys()].map(i => ({ partition: 0, value: `idem-${i}` })) })
  await p.disconnect()
  const consumer = kafka.consumer({ groupId: 'kafkajs-idempotent', ...GROUP_TIMEOUTS })
  await consumer.connect()
  await consumer.subscribe({ topic: 'js-idempotent', fromBeginning: true })
  const values = []
  await consumer.run({ eachMessage: async ({ message }) => { values.push(message.value.toString()) } })
  await until(() => values.length >= 5, 'the idempotent records')
  await consumer.disconnect()
  return { baseOffset: sent[0].baseOffset, values }
}

async function offsetsForTimes() {
  const a = kafka.admin()
  await a.connect()
  const found = await a.fetchTopicOffsetsByTimestamp(topic, BASE_TS + 3500)
  const latest = await a.fetchTopicOffsets(topic)
  await a.disconnect()
  return { byTime: found.map(o => [o.partition, o.offset]).sort(),
           latest: latest.map(o => [o.partition, o.offset, o.low, o.high]).sort() }
}

async function main() {
  const result = { admin: await admin(), produced: await produce() }
  result.read = await readBack()
  result.times = await offsetsForTimes()
  result.groups = await groups()
  result.idempotent = await idempotent()
  process.stdout.write(JSON.stringify(result))
}

main().catch(e => { process.stderr.write(`${e.stack || e}\n`); process.exit(1) })
