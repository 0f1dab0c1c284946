// kafkajs 2.2.4 over SASL_PLAINTEXT: for each mechanism, produce one record and read it back; then a wrong
// password. Prints one JSON document for tests/broker/test_broker_sasl_clients.py.
// Usage: node kafkajs_sasl.js HOST:PORT TOPIC USER PASSWORD
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, username, password] = process.argv.slice(2)

function client(mechanism, pass) {
  return new Kafka({ clientId: 'kafkajs-sasl', brokers: [bootstrap], logLevel: logLevel.NOTHING,
    sasl: { mechanism, username, password: pass }, retry: { retries: 0 }, connectionTimeout: 10000,
    authenticationTimeout: 10000 })
}

async function roundTrip(mechanism) {
  const kafka = client(mechanism, password)
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: [{ value: `kafkajs-${mechanism}` }] })
  await producer.disconnect()
  const admin = kafka.admin()
  await admin.connect()
  const offsets = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()
  return offsets.map(o => o.high)
}

async function wrongPassword() {
  const admin = client('scram-sha-256', 'not-the-password').admin()
  try {
    await admin.connect()
    return 'accepted'
  } catch (e) { return e.name + ': ' + e.message }
}

async function main() {
  const out = { highs: {} }
  for (const mechanism of ['plain', 'scram-sha-256', 'scram-sha-512']) out.highs[mechanism] = await roundTrip(mechanism)
  out.wrong = await wrongPassword()
  process.stdout.write(JSON.stringify(out))
}

main().catch(e => { console.error(e); process.exit(1) })
