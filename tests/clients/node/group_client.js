// kafkajs's consumer and admin client, driven over JSON lines (see tests/clients/line_client.py).
//
// Arguments: bootstrap servers, topic, partition count, session timeout ms, heartbeat interval ms. Each request on
// stdin is one JSON object with "id" and "op"; each answer on stdout carries the same "id" and a "result" (or an
// "error" when the call itself failed). kafkajs logs to stderr. It has no static membership (group.instance.id).
'use strict'

const readline = require('readline')
const { AssignerProtocol, Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, partitionsText, sessionText, heartbeatText] = process.argv.slice(2)
const partitionCount = Number(partitionsText)
const sessionTimeout = Number(sessionText)
const heartbeatInterval = Number(heartbeatText)

const logCreator = () => ({ namespace, log }) => {
  process.stderr.write(`${namespace}: ${log.message}\n`)
}

function kafka (clientId) {
  return new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.WARN, logCreator })
}

const admin = kafka('clients-admin').admin()
const members = new Map()

function errorText (error) {
  return `${error.name || error.type}: ${error.message}`
}

async function join ({ group, name, instance_id: instanceId }) {
  // A short fetch wait: disconnect() waits for the fetch in flight (kafkajs's default wait is 5 s). An instance id is
  // passed as a user would try it; kafkajs 2.2.4's consumer has no such option and joins as a dynamic member, which
  // the capability test in tests/clients/test_consumer_groups.py shows.
  const consumer = kafka(name).consumer({
    groupId: group,
    sessionTimeout,
    heartbeatInterval,
    rebalanceTimeout: sessionTimeout,
    maxWaitTimeInMs: 100,
    ...(instanceId ? { groupInstanceId: instanceId } : {})
  })
  const member = { consumer, group, owned: [], assignments: 0, open: true }
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    member.owned = (payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b)
    member.assignments += 1
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({ autoCommit: false, eachMessage: async () => {} })
  const handle = `m${members.size}`
  members.set(handle, member)
  return handle
}

function member (request) {
  const found = members.get(request.member)
  if (!found) throw new Error(`unknown member ${request.member}`)
  return found
}

async function fetchOffsets (group) {
  const [found] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  return found ? found.partitions : []
}

async function committed (request) {
  const { group } = member(request)
  const byPartition = new Map((await fetchOffsets(group)).map(p => [p.partition, Number(p.offset)]))
  const result = {}
  for (const partition of request.partitions) {
    const offset = byPartition.get(partition)
    result[partition] = offset === undefined || offset < 0 ? null : offset
  }
  return result
}

async function commit (request) {
  const { consumer } = member(request)
  const offsets = Object.entries(request.offsets).map(([partition, offset]) => (
    { topic, partition: Number(partition), offset: String(offset) }))
  try {
    await consumer.commitOffsets(offsets)
    return null
  } catch (error) {
    return errorText(error)
  }
}

async function close (request) {
  const found = member(request)
  if (found.open) {
    found.open = false
    await found.consumer.disconnect()
  }
  return null
}

async function describeGroups (groupIds) {
  const { groups } = await admin.describeGroups(groupIds)
  return groups
}

async function listGroups () {
  // kafkajs's listGroups names no state: describeGroups gives it
  const { groups } = await admin.listGroups()
  const result = {}
  if (groups.length === 0) return result
  for (const group of await describeGroups(groups.map(g => g.groupId))) result[group.groupId] = group.state
  return result
}

function assignedPartitions (raw) {
  if (!raw || raw.length === 0) return []
  const decoded = AssignerProtocol.MemberAssignment.decode(raw)
  return decoded ? (decoded.assignment[topic] || []).slice().sort((a, b) => a - b) : []
}

async function describe ({ group }) {
  const [found] = await describeGroups([group])
  return {
    state: found.state,
    members: found.members.map(m => ({
      client_id: m.clientId, instance_id: null, partitions: assignedPartitions(m.memberAssignment)
    }))
  }
}

async function groupOffsets ({ group }) {
  const result = {}
  for (const p of await fetchOffsets(group)) {
    if (Number(p.offset) >= 0) result[p.partition] = Number(p.offset)
  }
  return result
}

async function reset ({ group, to }) {
  if (typeof to === 'number') {
    const partitions = [...Array(partitionCount).keys()].map(partition => ({ partition, offset: String(to) }))
    await admin.setOffsets({ groupId: group, topic, partitions })
    return null
  }
  // kafkajs's resetOffsets commits Kafka's markers (-2 earliest, -1 latest); fetchOffsets with resolveOffsets
  // replaces them with the log's offsets
  await admin.resetOffsets({ groupId: group, topic, earliest: to === 'earliest' })
  await admin.fetchOffsets({ groupId: group, topics: [topic], resolveOffsets: true })
  return null
}

async function deleteGroup ({ group }) {
  try {
    await admin.deleteGroups([group])
    return null
  } catch (error) {
    return errorText(error)
  }
}

async function exit () {
  for (const handle of members.keys()) await close({ member: handle })
  await admin.disconnect()
  return null
}

const operations = {
  join,
  assignment: async request => member(request).owned,
  assignments: async request => member(request).assignments,
  commit,
  committed,
  close,
  list_groups: listGroups,
  describe,
  group_offsets: groupOffsets,
  reset,
  delete: deleteGroup,
  exit
}

async function main () {
  await admin.connect()
  const lines = readline.createInterface({ input: process.stdin })
  for await (const line of lines) {
    const request = JSON.parse(line)
    const answer = { id: request.id }
    try {
      const operation = operations[request.op]
      if (!operation) throw new Error(`unknown op ${request.op}`)
      answer.result = await operation(request)
    } catch (error) {
      answer.error = errorText(error)
    }
    process.stdout.write(JSON.stringify(answer) + '\n')
    if (request.op === 'exit') break
  }
  process.exit(0)
}

main().catch(error => {
  process.stderr.write(`${error.stack}\n`)
  process.exit(1)
})
