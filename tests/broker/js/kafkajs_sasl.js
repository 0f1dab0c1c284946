// kafkajs 2.2.4 over the broker's security listeners: for SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (on
// SASL_PLAINTEXT), SSL with the broker's CA file and SCRAM-SHA-512 on SASL_SSL, produce one record to every
// partition and read them all back in a consumer group; then a wrong password. Prints one JSON document for
// tests/broker/test_broker_kafkajs_security.py.
// Usage: node kafkajs_sasl.js '{"sasl": "h:p,...", "ssl": "h:p,...", "saslSsl": "h:p,...", "ca": "cert.pem",
//                               "topic": "t", "username": "u", "password": "p"}'
'use strict'
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')
const { GROUP_TIMEOUTS, until } = require('./kafkajs_helpers')

const settings = JSON.parse(process.argv[2])
const { topic, username, password } = settings

function client(name, brokers, security) {
  return new Kafka({ clientId: `kafkajs-${name}`, brokers: brokers.split(','), logLevel: logLevel.NOTHING,
    retry: { retries: 2 }, connectionTimeout: 10000, authenticationTimeout: 10000, ...security })
}

// produce `${name}-${p}` to each partition, then consume them back as group `kafkajs-${name}`
async function roundTrip(name, brokers, security) {
  const kafka = client(name, brokers, security)
  const admin = kafka.admin()
  await admin.connect()
  const partitions = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length
  await admin.disconnect()
  const producer = kafka.producer()
  await producer.connect()
  const messages = [...Array(partitions).keys()].map(p => ({ partition: p, value: `${name}-${p}` }))
  await producer.send({ topic, messages })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `kafkajs-${name}`, ...GROUP_TIMEOUTS })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = new Set()
  await consumer.run({ eachMessage: async ({ message }) => {
    const value = message.value.toString()
    if (value.startsWith(`${name}-`)) got.add(value)
  } })
  await until(() => got.size === partitions, `${name}: ${partitions} records in the group`)
  await consumer.disconnect()
  return [...got].sort()
}

async function wrongPassword() {
  const admin = client('wrong', settings.sasl,
    { sasl: { mechanism: 'scram-sha-256', username, password: 'not-the-password' } }).admin()
  try {
    await admin.connect()
    return 'accepted'
  } catch (e) { return e.name + ': ' + e.message }
}

async function main() {
  const out = { consumed: {} }
  for (const mechanism of ['plain', 'scram-sha-256', 'scram-sha-512']) {
    out.consumed[mechanism] = await roundTrip(mechanism, settings.sasl, { sasl: { mechanism, username, password } })
  }
  const tls = { rejectUnauthorized: true, ca: [fs.readFileSync(settings.ca, 'utf-8')] }
  out.consumed.ssl = await roundTrip('ssl', settings.ssl, { ssl: tls })
  out.consumed['sasl-ssl'] = await roundTrip('sasl-ssl', settings.saslSsl,
    { ssl: tls, sasl: { mechanism: 'scram-sha-512', username, password } })
  out.wrong = await wrongPassword()
  process.stdout.write(JSON.stringify(out))
}

main().catch(e => { console.error(e); process.exit(1) })
