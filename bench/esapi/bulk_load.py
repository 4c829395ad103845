"""Loads JSON lines through the Elasticsearch-compatible HTTP API with the
official Python client, for docs/benchmarks.md ("The HTTP API").

  python bulk_load.py URL FILE INDEX MODE

MODE: bulk (helpers.bulk, one thread), parallel (helpers.parallel_bulk, 4
threads, as `sluice bulk` has 4 workers), parallel-fastswitch (the same with
Python's GIL switch interval at 0.5 ms instead of 5 ms: faster means threads
waited for the GIL), raw-parallel (parallel_bulk of the
lines as they are, no json.loads/dumps in Python). Every mode sends 1,000
documents per request, as `sluice bulk` does, with the id from the "id"
field. Prints one line: MODE docs seconds docs/s, and the client's own
CPU seconds (process_time): near the wall time, the client (one core under
Python's GIL) is what bounds the load, not the server.
"""

import json
import re
import sys
import time

from elasticsearch import Elasticsearch, helpers

url, path, index, mode = sys.argv[1:5]
es = Elasticsearch(url, request_timeout=120)
es.indices.create(
    index=index,
    settings={"number_of_shards": 3, "number_of_routing_shards": 6},
    mappings={"properties": {"id": {"type": "keyword"}, "title": {"type": "text"}, "body": {"type": "text"}}},
)


def dict_actions():
    with open(path, "rb") as f:
        for line in f:
            doc = json.loads(line)
            yield {"_index": index, "_id": doc["id"], "_source": doc}


def raw_actions():
    # The id is cut from the line's start ({"id": "...", ...}) so the
    # source is passed on as the bytes it is.
    id_re = re.compile(rb'\{"id":\s*"([^"]*)"')
    with open(path, "rb") as f:
        for line in f:
            yield {"index": {"_index": index, "_id": id_re.match(line).group(1).decode()}}, line.rstrip(b"\n")


start, cpu0 = time.perf_counter(), time.process_time()
n = 0
if mode == "bulk":
    n, errors = helpers.bulk(es, dict_actions(), chunk_size=1000, max_chunk_bytes=100 << 20, max_retries=5)
    assert not errors
elif mode in ("parallel", "parallel-fastswitch"):
    if mode == "parallel-fastswitch":
        sys.setswitchinterval(0.0005)
    for ok, item in helpers.parallel_bulk(es, dict_actions(), thread_count=4, chunk_size=1000, max_chunk_bytes=100 << 20):
        assert ok, item
        n += 1
elif mode == "raw-parallel":
    # parallel_bulk takes (action, source) pairs through expand_action_callback.
    for ok, item in helpers.parallel_bulk(es, raw_actions(), thread_count=4, chunk_size=1000, max_chunk_bytes=100 << 20,
                                          expand_action_callback=lambda x: x):
        assert ok, item
        n += 1
else:
    sys.exit(f"unknown mode {mode}")
secs = time.perf_counter() - start
print(f"{mode} {n} {secs:.2f} {n / secs:.0f} client-cpu {time.process_time() - cpu0:.2f}")
es.indices.delete(index=index)
