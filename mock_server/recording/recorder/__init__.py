"""The recorder (`mock-server record`, docs/recording.md "Record"): an HTTP/1.1
proxy read by llhttp, its upstream client, the redaction that keeps no secret, and
the file it writes."""
