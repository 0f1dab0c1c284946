// Shared by the kafkajs checks: group timeouts that tolerate a loaded machine, and waiting for a condition.
'use strict'

const GROUP_TIMEOUTS = { sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 20000, maxWaitTimeInMs: 100 }

async function until(check, what, ms = 60000) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

module.exports = { GROUP_TIMEOUTS, until }
