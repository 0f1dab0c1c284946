// kafkajs 2.2.4 transactions against a kafkalab broker: commit, abort, consume-transform-produce (a group
// member consumes, a transactional producer writes the transformed records and sendOffsets), a zombie fenced by
// a second producer with the same transactional id, and the topic read back by kafkajs consumers with
// readUncommitted false and true. Prints one JSON document for tests/broker/test_broker_transactions_kafkajs.py,
// which also reads the topics back with librdkafka.  Usage: node kafkajs_transactions.js HOST:PORT
'use strict'
const { Kafka, logLevel } = require('kafkajs')
const { GROUP_TIMEOUTS, until } = require('./kafkajs_helpers')

const [bootstrap] = process.argv.slice(2)
const kafka = new Kafka({ clientId: 'kafkajs-txn', brokers: [bootstrap], logLevel: logLevel.NOTHING,
  retry: { retries: 3, initialRetryTime: 50 } })

function transactional(id) {
  return kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1,
    allowAutoTopicCreation: false })
}

async function commitAndAbort() {
  const producer = transactional('js-app')
  await producer.connect()
  const steps = [[['c1', 'c2'], true], [['a1', 'a2'], false], [['c3'], true]]
  for (const [values, commit] of steps) {
    const txn = await producer.transaction()
    await txn.send({ topic: 't', messages: values.map((value, i) => ({ value, partition: i % 2 })) })
    await (commit ? txn.commit() : txn.abort())
  }
  await producer.disconnect()
}

async function consumeTransformProduce() {
  // A member of group js-ctp consumes 'in' (no auto-commit); the transformed records and the consumed offsets go
  // in one transaction: aborted once, then committed.
  const plain = kafka.producer()
  await plain.connect()
  await plain.send({ topic: 'in', messages: ['x0', 'x1', 'x2'].map(value => ({ value, partition: 0 })) })
  await plain.disconnect()
  const consumer = kafka.consumer({ groupId: 'js-ctp', readUncommitted: false, ...GROUP_TIMEOUTS })
  await consumer.connect()
  await consumer.subscribe({ topic: 'in', fromBeginning: true })
  const consumed = []
  await consumer.run({ autoCommit: false, eachMessage: async ({ message }) => { consumed.push(message) } })
  await until(() => consumed.length >= 3, 'the consumer reading the input')
  await consumer.pause([{ topic: 'in' }])
  const producer = transactional('js-ctp')
  await producer.connect()
  const next = String(Number(consumed[consumed.length - 1].offset) + 1)
  for (const commit of [false, true]) {
    const txn = await producer.transaction()
    await txn.send({ topic: 'out', messages: consumed.map(m => ({ value: m.value.toString().toUpperCase(),
      partition: 0 })) })
    await txn.sendOffsets({ consumerGroupId: 'js-ctp', topics: [{ topic: 'in', partitions: [
      { partition: 0, offset: commit ? next : '1' }] }] })
    await (commit ? txn.commit() : txn.abort())
  }
  await producer.disconnect()
  await consumer.disconnect()
  return consumed.map(m => m.value.toString())
}

async function readBack(topic, readUncommitted, expected) {
  // kafkajs has no assign(): a fresh group reads the topic from the beginning, then a quiet second for more.
  const consumer = kafka.consumer({ groupId: `js-read-${topic}-${readUncommitted}`, readUncommitted,
    ...GROUP_TIMEOUTS })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const values = []
  await consumer.run({ eachMessage: async ({ message }) => { values.push(message.value.toString()) } })
  await until(() => values.length >= expected, `${expected} records of ${topic}`)
  await new Promise(resolve => setTimeout(resolve, 1000))
  await consumer.disconnect()
  return values.sort()
}

async function zombie() {
  const old = transactional('js-zombie')
  await old.connect()
  const txn = await old.transaction()
  await txn.send({ topic: 't', messages: [{ value: 'zombie', partition: 0 }] })
  const successor = transactional('js-zombie')
  await successor.connect()
  const next = await successor.transaction()       // InitProducerId: bumps the epoch, aborts the zombie's records
  let fenced = null
  try {
    await txn.commit()
    fenced = 'committed'
  } catch (e) { fenced = e.type || e.name }
  await next.send({ topic: 't', messages: [{ value: 'successor', partition: 1 }] })
  await next.commit()
  await successor.disconnect()
  await old.disconnect().catch(() => {})
  return fenced
}

async function main() {
  await commitAndAbort()
  const consumed = await consumeTransformProduce()
  const fenced = await zombie()
  const read = { committed: await readBack('t', false, 4), uncommitted: await readBack('t', true, 7),
                 outCommitted: await readBack('out', false, 3) }
  process.stdout.write(JSON.stringify({ fenced, consumed, read }))
}

main().catch(e => { process.stderr.write(String(e && e.stack || e)); process.exit(1) })
