"""Recorded sessions (docs/recording.md): a merchant's real traffic with the provider,
kept as a file, to measure the sandbox against and to calibrate it by.

Modules, by command:

`mock-server record`

* `record`: the command line around `Recorder` (start, ready lines, signals, the scan,
  the summary).
* `proxy`: `Recorder`, the recording proxy: every request passed to the upstream and
  back unchanged, each exchange recorded, and a webhook receiver on the same port.
* `listener`: the proxy's HTTP/1.1 server (an asyncio protocol): requests read whole,
  answered as the handler says. `upstream`: its HTTP/1.1 client of the upstream, over
  kept-alive connections. `http1`: the message rules both share (a head parsed and
  checked, a body's framing, chunks joined).
* `redaction`: the rules that turn every secret (tokens, API keys, client codes,
  delivered codes, webhook signatures, cookies, e-mail addresses) into a keyed-hash
  placeholder before an event reaches the file, and the scan of the finished file for
  every secret value seen.
* `fileformat`: the recording file: JSON Lines (written gzipped for a `.gz` path), its
  header line and its two kinds of event (`exchange`, `webhook`); `RecordingWriter`
  writes it, one flushed line per finished event; `read_bytes` reads a file back,
  gzipped or not by its first bytes, a file cut short by a killed recorder included,
  and `read_lines` its whole lines.

Reading a recording (every command below)

* `reading`: a recording file or a HAR 1.2 file read into one `Recording` (exchanges
  and webhooks), or a `RecordingError` saying `file:line: reason`.
* `traces`: each recorded order's life as the recording saw it (a `Trace` of
  observations), and the outcome classes orders fall into.

`mock-server calibrate`

* `calibrate`: one scenario per outcome class, its steps delayed by the delays
  observed and weighted by how many orders it holds.

`mock-server compare`

* `compare`: the command: reads the files, runs the replay, reports (text or JSON).
* `replay`: the replay's run (`run`, `Outcome`): sessions, classes explained, each
  session replayed, in a sandbox server started for it.
* `sessions`: one `Session` per recording: its traces, time span, API keys, the
  accounts whose orders showed webhooks.
* `catalog_inference`: the catalog the recordings' order answers show (`infer_catalog`),
  sold by the replay's sandboxes unless `--catalog` gives one.
* `world`: the sandbox server the replay starts and drives over HTTP (`Server`), a
  sandbox of its own per play or session (`World`), and the webhook receiver
  answering as recorded (`Receiver`).
* `explain`: each outcome class's orders played under every scenario (`explain`,
  `ClassVerdict`).
* `judge`: whether a play (`Play`) gives what the recording saw of its order (`judge`),
  within the tolerances.
* `session_replay`: a session's requests sent in order and each answer compared
  (`replay_session`), then its statuses, balance changes and first webhooks.
* `rewriting`: each recorded request rewritten for the sandbox: headers, bodies, and the
  recorded tokens and order ids bound to the sandbox's (`Binding`).
* `findings`: a difference found (`Finding`): shapes as `conformance.compare` sees them,
  and values (enums, echoed fields, money).
* `paths`: the service's paths the replay tells apart.
* `values`: small value helpers the replay's modules share (JSON values, cents, times).

`mock-server recording export --har`

* `har`: a recording written as HAR 1.2, its webhooks as inbound entries that `reading`
  reads back.
"""
