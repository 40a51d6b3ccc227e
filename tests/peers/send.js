// Sends Lumberjack events with a real npm writer, for ripple's tests.
//
//   node send.js MODE PORT SPEC_JSON
//
// SPEC_JSON: {"queued": [events...], "later": [events...], "window": N}
// MODE:
//   client    lumberjack-client 1.0.3 (v2, plain TCP): the `queued` events are
//             logged before the connection is up (one batch: W, then a C frame),
//             each of the `later` events once it is (a batch each).
//   protocol  lumberjack-protocol 1.0.7 (v1, TLS, certificate not checked):
//             `window` as its window size; the `queued` events, then, once the
//             reader has acked all of them, the `later` ones.
//   frames    lumberjack-protocol's own frame builders over plain TCP (v1): a W
//             frame, then a D frame per event (seq from 1), `queued` first, then
//             `later` once the reader has acked the queued ones.
// Prints one JSON line per ack the writer received ({"ack": N}), then {"done": true}.
'use strict'
const net = require('net')

const [mode, port, specText] = process.argv.slice(2)
const spec = JSON.parse(specText)
const host = '127.0.0.1'
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const fail = (err) => { say({ error: String(err && err.message || err) }); process.exit(2) }
setTimeout(() => fail('timed out'), 20000).unref()

if (mode === 'client') {
  const LumberjackClient = require('lumberjack-client')
  const c = new LumberjackClient({ host, port: Number(port) })
  for (const e of spec.queued) c.log(e)
  const started = Date.now()
  const wait = setInterval(() => {
    if (!c.connected) {
      if (Date.now() - started > 10000) fail('never connected')
      return
    }
    clearInterval(wait)
    for (const e of spec.later) c.log(e)
    // lumberjack-client never reads acks: they are drained here (a paused
    // socket would never see the reader's FIN), the socket half-closed once
    // all is written, and the process leaves when the reader closes (the
    // client's own close handler would reconnect).
    c.socket.on('data', () => {})
    c.socket.on('close', () => { say({ done: true }); process.exit(0) })
    c.socket.end()
  }, 20)
} else if (mode === 'protocol') {
  const lumberjack = require('lumberjack-protocol')
  const client = lumberjack.client(
    { host, port: Number(port), rejectUnauthorized: false },
    { windowSize: spec.window, reconnect: 60000 })
  client.on('connect', () => {
    const socket = client._socket
    const acked = (n, then) => socket.on('ack', (seq) => { if (seq === n) then() })
    socket.on('ack', (seq) => say({ ack: seq }))
    for (const e of spec.queued) client.writeDataFrame(e)
    acked(spec.queued.length, () => {
      for (const e of spec.later) client.writeDataFrame(e)
      acked(spec.queued.length + spec.later.length, () => { say({ done: true }); client.close(); process.exit(0) })
    })
  })
  client.on('disconnect', (err) => { if (err) fail(err) })
} else if (mode === 'frames') {
  const frames = require('lumberjack-protocol/lib/lumberjack')
  const socket = net.connect({ host, port: Number(port) }, () => {
    const parser = new frames.Parser()
    socket.pipe(parser)
    let seq = 0
    const send = (events) => { for (const e of events) socket.write(frames.makeDataFrame(++seq, e)) }
    parser.on('data', (ack) => {
      say({ ack: ack.seq })
      if (ack.seq === spec.queued.length && spec.later.length) send(spec.later)
      if (ack.seq === spec.queued.length + spec.later.length) {
        socket.on('close', () => { say({ done: true }); process.exit(0) })
        socket.end()
      }
    })
    parser.on('error', fail)
    socket.write(frames.makeWindowSizeFrame(spec.window))
    send(spec.queued)
  })
  socket.on('error', fail)
} else {
  fail(`unknown mode ${mode}`)
}
