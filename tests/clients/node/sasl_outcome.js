// kafkajs's admin client connecting once (tests/security/client_outcomes.py): prints "ok" when it listed the
// topics, else the error's name. Arguments: bootstrap, protocol (SASL_PLAINTEXT, SASL_SSL, PLAINTEXT, SSL),
// mechanism, user (empty: no SASL), CA file. The password comes on stdin, never on the command line.
'use strict'

const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, protocol, mechanism, user, caFile] = process.argv.slice(2)
const password = fs.readFileSync(0, 'utf8').split('\n')[0]

async function main () {
  const config = { clientId: 'sasl-outcome', brokers: [bootstrap], logLevel: logLevel.NOTHING,
    connectionTimeout: 4000, requestTimeout: 4000, retry: { retries: 0 } }
  if (protocol.endsWith('SSL')) config.ssl = { ca: [fs.readFileSync(caFile, 'utf8')] }
  if (user) config.sasl = { mechanism: mechanism.toLowerCase(), username: user, password }
  const admin = new Kafka(config).admin()
  try {
    await admin.connect()
    await admin.listTopics()
    process.stdout.write('ok\n')
  } catch (error) {
    process.stdout.write(`kafkajs ${error.name}\n`)
  } finally {
    await admin.disconnect().catch(() => {})
  }
}

main().then(() => process.exit(0))
