"""The access-log sink: lines rendered in batches, off the request's path, never many at
once (a large batch stalls every request in flight)."""

from __future__ import annotations

import io
import json

from mock_server.logs import BATCH, LineSink

RECORD = ("127.0.0.1", "GET", "/api/v1/orders/o-1", 200, 0.00125)


def test_lines_wait_for_a_flush_until_a_batch_is_full():
    stream = io.StringIO()
    sink = LineSink(stream)
    for _ in range(BATCH - 1):
        sink.write(RECORD)
    assert stream.getvalue() == ""
    sink.write("a plain line")
    lines = stream.getvalue().splitlines()
    assert len(lines) == BATCH
    assert lines[0] == "127.0.0.1 GET /api/v1/orders/o-1 200 1.2ms"
    assert lines[-1] == "a plain line"
    sink.write(RECORD)
    sink.flush()
    assert len(stream.getvalue().splitlines()) == BATCH + 1


def test_json_records_carry_their_wall_time():
    stream = io.StringIO()
    sink = LineSink(stream)
    sink.write((*RECORD, 0.0))
    sink.flush()
    line = json.loads(stream.getvalue())
    assert line == {
        "time": "1970-01-01T00:00:00Z",
        "method": "GET",
        "path": "/api/v1/orders/o-1",
        "status": 200,
        "duration_ms": 1.25,
        "remote": "127.0.0.1",
    }
