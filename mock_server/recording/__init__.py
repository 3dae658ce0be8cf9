"""Recorded sessions (docs/recording.md): a merchant's real traffic with the provider,
kept as a file, to measure the sandbox against and to calibrate it by.

Modules:

* `fileformat`: the recording file: JSON Lines (gzipped for a `.gz` path), its header
  line and its two kinds of event (`exchange`, `webhook`); `RecordingWriter` writes it,
  one flushed line per finished event, and `read_lines` reads a file back, a file cut
  short by a killed recorder included.
* `redaction`: the rules that turn every secret (tokens, API keys, client codes,
  delivered codes, webhook signatures, cookies, e-mail addresses) into a keyed-hash
  placeholder before an event reaches the file, and the scan of the finished file for
  every secret value seen.
* `proxy`: `Recorder`, the recording proxy: every request passed to the upstream and
  back unchanged, each exchange recorded, and a webhook receiver on the same port.
* `record`: `mock-server record`, the command line around `Recorder` (start, ready
  lines, signals, the scan, the summary).
"""
