// kafkajs 2.2.4 against a kafkalab broker: admin calls, keyed records with headers and explicit timestamps
// (plain and gzip), read back partition by partition, offsets for times. Prints one JSON document for
// tests/broker/test_broker_kafkajs.py to assert on.  Usage: node kafkajs_check.js HOST:PORT TOPIC
'use strict'
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

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
  // kafkajs consumers always join a group; reading assigned partitions goes through the broker object.
  const createCluster = Object.getOwnPropertySymbols(kafka).find(s => s.description === 'private:Kafka:createCluster')
  const cluster = kafka[createCluster]({ allowAutoTopicCreation: false })
  await cluster.connect()
  await cluster.addTargetTopic(topic)
  const out = {}
  for (const partition of [0, 1]) {
    const [leader] = Object.keys(cluster.findLeaderForPartitions(topic, [partition]))
    const broker = await cluster.findBroker({ nodeId: leader })
    const response = await broker.fetch({ maxWaitTime: 100, minBytes: 1, topics: [{ topic,
      partitions: [{ partition, fetchOffset: '0', maxBytes: 1048576 }] }] })
    const data = response.responses[0].partitions[0]
    out[partition] = data.messages.map(m => ({ offset: m.offset, key: m.key.toString(), value: m.value.toString(),
      timestamp: m.timestamp, headers: Object.fromEntries(Object.entries(m.headers).map(([k, v]) =>
        [k, v.toString()])) }))
  }
  await cluster.disconnect()
  return out
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
  process.stdout.write(JSON.stringify(result))
}

main().catch(e => { process.stderr.write(`${e.stack || e}\n`); process.exit(1) })
