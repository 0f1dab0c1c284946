// kafkajs 2.2.4 transactions against a kafkalab broker: commit, abort, sendOffsets (consume-transform-produce's
// producer side) and a zombie fenced by a second producer with the same transactional id. Prints one JSON
// document for tests/broker/test_broker_transactions_kafkajs.py, which reads the topics back with
// read_committed and read_uncommitted consumers.  Usage: node kafkajs_transactions.js HOST:PORT
'use strict'
const { Kafka, logLevel } = require('kafkajs')

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
  const producer = transactional('js-ctp')
  await producer.connect()
  for (const commit of [false, true]) {
    const txn = await producer.transaction()
    await txn.send({ topic: 'out', messages: ['X0', 'X1', 'X2'].map(value => ({ value, partition: 0 })) })
    await txn.sendOffsets({ consumerGroupId: 'js-ctp', topics: [{ topic: 'in', partitions: [
      { partition: 0, offset: commit ? '3' : '2' }] }] })
    await (commit ? txn.commit() : txn.abort())
  }
  await producer.disconnect()
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
  await consumeTransformProduce()
  const fenced = await zombie()
  process.stdout.write(JSON.stringify({ fenced }))
}

main().catch(e => { process.stderr.write(String(e && e.stack || e)); process.exit(1) })
