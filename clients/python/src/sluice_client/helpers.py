"""Bulk loading, sliced scans and points-in-time over the Sluice stub."""

from __future__ import annotations

import json
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import grpc
from google.protobuf import duration_pb2

from sluice_client._pb.sluice.v1 import query_pb2, sluice_pb2
from sluice_client.client import Client, retry_delay

# Codes after which an item or a whole bulk was not applied and may be
# sent again: overload, or a shard not started yet.
_RETRYABLE = (grpc.StatusCode.RESOURCE_EXHAUSTED.value[0], grpc.StatusCode.UNAVAILABLE.value[0])

_ACTIONS = {
    "index": sluice_pb2.BULK_ACTION_INDEX,
    "create": sluice_pb2.BULK_ACTION_CREATE,
    "delete": sluice_pb2.BULK_ACTION_DELETE,
    "update": sluice_pb2.BULK_ACTION_UPDATE,
    "update_doc_values": sluice_pb2.BULK_ACTION_UPDATE_DOC_VALUES,
}

# The keys of an update's body Sluice takes (docs/updates.md).
_UPDATE_KEYS = {"doc", "upsert", "doc_as_upsert", "detect_noop"}

_REFRESH = {
    None: sluice_pb2.REFRESH_POLICY_UNSPECIFIED,
    False: sluice_pb2.REFRESH_POLICY_NONE,
    True: sluice_pb2.REFRESH_POLICY_IMMEDIATE,
    "wait_for": sluice_pb2.REFRESH_POLICY_WAIT_FOR,
}


def _duration(seconds: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(seconds * 1e9))
    return d


def _json(v: Any) -> bytes:
    """A document as JSON bytes: dicts encoded, str and bytes as they are."""
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, bytes):
        return v
    return json.dumps(v, separators=(",", ":")).encode()


def _item(action: Any) -> sluice_pb2.BulkItem:
    """A BulkItem from a BulkItem or a dict in the Elasticsearch helpers'
    form: {"_op_type", "_index", "_id", "_routing", "_source"}.

    index and create: "_source" is the document (dict, str or bytes);
    without it, the keys not starting with "_" are. update (a partial
    update): the body — "_source", or the keys not starting with "_" — has
    "doc", and may have "upsert", "doc_as_upsert" and "detect_noop" (true);
    scripts are refused. update_doc_values (an in-place update of doc-value
    fields): the document is the fields to set. delete: no document."""
    if isinstance(action, sluice_pb2.BulkItem):
        return action
    op = action.get("_op_type", "index")
    if op not in _ACTIONS:
        raise ValueError(f"_op_type {op!r}: Sluice's bulk takes {', '.join(_ACTIONS)}")
    item = sluice_pb2.BulkItem(action=_ACTIONS[op], index=action.get("_index", ""), id=str(action.get("_id", "")),
                               routing=action.get("_routing", ""))
    if op == "delete":
        return item
    src = action.get("_source")
    if src is None:
        src = {k: v for k, v in action.items() if not k.startswith("_")}
    if op != "update":
        item.source = _json(src)
        return item
    unknown = set(src) - _UPDATE_KEYS
    if unknown:
        raise ValueError(f"update {item.id!r}: {', '.join(sorted(unknown))} not supported (Sluice takes doc, upsert, doc_as_upsert; no scripts)")
    if "doc" not in src:
        raise ValueError(f"update {item.id!r}: doc is missing")
    if src.get("detect_noop", True) is not True:
        raise ValueError(f"update {item.id!r}: detect_noop=false is not supported (an update that changes nothing writes nothing)")
    item.source = _json(src["doc"])
    if src.get("upsert") is not None:
        item.upsert = _json(src["upsert"])
    item.doc_as_upsert = bool(src.get("doc_as_upsert", False))
    return item


@dataclass
class BulkItemError:
    """One item the cluster refused: the item sent, and its result (status
    ERROR, with error.code a gRPC status code and error.reason)."""

    item: sluice_pb2.BulkItem
    result: sluice_pb2.BulkItemResult

    @property
    def code(self) -> grpc.StatusCode:
        return next((c for c in grpc.StatusCode if c.value[0] == self.result.error.code), grpc.StatusCode.UNKNOWN)

    @property
    def reason(self) -> str:
        return self.result.error.reason

    def __str__(self) -> str:
        return f"{self.result.index or self.item.index}/{self.item.id}: {self.code.name}: {self.reason}"


@dataclass
class BulkResult:
    """What a bulk did: items applied (created, updated, deleted, a delete
    of an id that was not there, or an update that changed nothing), of
    those the updates that changed nothing (noop), the items refused, in
    input order, and how many times items were sent again after overload."""

    applied: int = 0
    noop: int = 0
    errors: list[BulkItemError] = field(default_factory=list)
    retries: int = 0


class BulkError(Exception):
    """Some items were refused; .result has every one."""

    def __init__(self, result: BulkResult):
        first = "; ".join(str(e) for e in result.errors[:3])
        super().__init__(f"{len(result.errors)} bulk items failed: {first}")
        self.result = result


def bulk(
    client: Client,
    actions: Iterable[Any],
    *,
    index: str = "",
    chunk_size: int = 1000,
    max_chunk_bytes: int = 8 << 20,
    refresh: Any = None,
    max_retries: int = 8,
    initial_backoff: float = 0.1,
    max_backoff: float = 10.0,
    timeout: float | None = None,
    raise_on_error: bool = True,
) -> BulkResult:
    """Sends actions (BulkItems or dicts, see _item) in Bulk calls of at
    most chunk_size items and max_chunk_bytes of sources.

    A call refused as a whole with RESOURCE_EXHAUSTED or UNAVAILABLE, and
    items refused with those codes, are sent again up to max_retries times,
    after an exponential backoff (initial_backoff doubling to max_backoff,
    jittered) of at least the delay the server asked for (RetryInfo, or the
    item's retry_delay). Other item failures are final: they are in the
    result's errors, in input order, and raise BulkError at the end when
    raise_on_error. Other errors of a whole call raise grpc.RpcError.
    refresh: None (the index's), False, True or "wait_for".
    """
    result = BulkResult()
    chunk: list[sluice_pb2.BulkItem] = []
    size = 0
    for a in actions:
        it = _item(a)
        chunk.append(it)
        size += len(it.source) + len(it.id) + 16
        if len(chunk) >= chunk_size or size >= max_chunk_bytes:
            _send(client, chunk, index, _REFRESH[refresh], result, max_retries, initial_backoff, max_backoff, timeout)
            chunk, size = [], 0
    if chunk:
        _send(client, chunk, index, _REFRESH[refresh], result, max_retries, initial_backoff, max_backoff, timeout)
    if result.errors and raise_on_error:
        raise BulkError(result)
    return result


def _backoff(attempt: int, hint: float | None, initial: float, ceiling: float) -> float:
    d = min(initial * (2 ** attempt), ceiling)
    d = max(d, hint or 0)
    return d * random.uniform(0.75, 1.25)


def _send(client, items, index, refresh, result, max_retries, initial, ceiling, timeout):
    # Positions in the chunk, so errors stay in input order across retries.
    pending = list(range(len(items)))
    errors: dict[int, BulkItemError] = {}
    attempt = 0
    while pending:
        req = sluice_pb2.BulkRequest(index=index, items=[items[i] for i in pending], refresh=refresh)
        try:
            resp = client.stub.Bulk(req, timeout=timeout)
        except grpc.RpcError as err:
            if err.code().value[0] in _RETRYABLE and attempt < max_retries:
                result.retries += len(pending)
                time.sleep(_backoff(attempt, retry_delay(err), initial, ceiling))
                attempt += 1
                continue
            raise
        again, hint = [], 0.0
        for pos, r in zip(pending, resp.items):
            if r.status != sluice_pb2.BULK_ITEM_STATUS_ERROR:
                result.applied += 1
                result.noop += r.status == sluice_pb2.BULK_ITEM_STATUS_NOOP
            elif r.error.code in _RETRYABLE and attempt < max_retries:
                again.append(pos)
                hint = max(hint, r.error.retry_delay.ToTimedelta().total_seconds())
            else:
                errors[pos] = BulkItemError(items[pos], r)
        if again:
            result.retries += len(again)
            time.sleep(_backoff(attempt, hint, initial, ceiling))
            attempt += 1
        pending = again
    result.errors.extend(errors[p] for p in sorted(errors))


class PointInTime:
    """An open point-in-time: a fixed view of its indices. .id is the
    latest id the cluster gave (use it for the next request)."""

    def __init__(self, client: Client, pit_id: str, keep_alive: float):
        self.client, self.id, self.keep_alive = client, pit_id, keep_alive

    def pit(self) -> sluice_pb2.PointInTime:
        """The PointInTime of a request, extending the keep-alive."""
        return sluice_pb2.PointInTime(id=self.id, keep_alive=_duration(self.keep_alive))

    def search(self, request: sluice_pb2.SearchRequest | None = None, **fields) -> sluice_pb2.SearchResponse:
        """Searches the point-in-time: a SearchRequest (or its fields as
        keyword arguments) with pit set, following the id it answers."""
        req = sluice_pb2.SearchRequest()
        if request is not None:
            req.CopyFrom(request)
        for k, v in fields.items():
            if isinstance(v, list):
                getattr(req, k).extend(v)
            elif hasattr(v, "DESCRIPTOR"):
                getattr(req, k).CopyFrom(v)
            else:
                setattr(req, k, v)
        req.pit.CopyFrom(self.pit())
        resp = self.client.stub.Search(req)
        if resp.pit_id:
            self.id = resp.pit_id
        return resp

    def pages(self, *, sort: list[sluice_pb2.SortField], size: int = 1000, query: query_pb2.Query | None = None,
              fetch_source: bool = True) -> Iterator[list[sluice_pb2.Hit]]:
        """Every matching hit in sort order, a page at a time, by
        search_after; add "_shard_doc" last to the sort for a total order."""
        after = None
        while True:
            req = sluice_pb2.SearchRequest(sort=sort, size=size, fetch_source=fetch_source)
            if query is not None:
                req.query.CopyFrom(query)
            if after is not None:
                req.search_after.values.extend(after)
            hits = list(self.search(req).hits)
            if not hits:
                return
            yield hits
            after = hits[-1].sort

    def close(self) -> None:
        self.client.stub.ClosePointInTime(sluice_pb2.ClosePointInTimeRequest(id=self.id))


class point_in_time:
    """Opens a point-in-time of indices for a with block and closes it at
    its end: ``with point_in_time(client, ["books"]) as pit: pit.search(...)``."""

    def __init__(self, client: Client, indices: list[str] | str, keep_alive: float = 60.0):
        self.client, self.keep_alive = client, keep_alive
        self.indices = [indices] if isinstance(indices, str) else list(indices)
        self.pit: PointInTime | None = None

    def __enter__(self) -> PointInTime:
        resp = self.client.stub.OpenPointInTime(
            sluice_pb2.OpenPointInTimeRequest(indices=self.indices, keep_alive=_duration(self.keep_alive)))
        self.pit = PointInTime(self.client, resp.id, self.keep_alive)
        return self.pit

    def __exit__(self, *exc) -> None:
        try:
            self.pit.close()
        except grpc.RpcError as err:
            # Expired or closed already: nothing left to free.
            if err.code() != grpc.StatusCode.NOT_FOUND:
                raise


_DONE = object()


def scan(
    client: Client,
    indices: list[str] | str | None = None,
    *,
    query: query_pb2.Query | None = None,
    slices: int = 1,
    pit: PointInTime | None = None,
    batch_size: int = 1000,
    fetch_source: bool = True,
    keep_alive: float = 60.0,
) -> Iterator[sluice_pb2.ScrollDoc]:
    """Every document of indices (or of pit) matching query, in no order:
    a Scroll stream per slice, the slices read concurrently by as many
    threads, over one point-in-time so that they see the same documents
    (opened for the scan and closed after it unless pit is given). Each
    document comes exactly once. A slice count at most the shard count
    reads whole shards per slice."""
    if slices < 1:
        raise ValueError("slices must be at least 1")
    if pit is None and slices > 1:
        with point_in_time(client, indices, keep_alive) as own:
            yield from scan(client, query=query, slices=slices, pit=own, batch_size=batch_size,
                            fetch_source=fetch_source, keep_alive=keep_alive)
        return

    def request(slice_id: int) -> sluice_pb2.ScrollRequest:
        req = sluice_pb2.ScrollRequest(batch_size=batch_size, fetch_source=fetch_source)
        if pit is not None:
            req.pit.CopyFrom(pit.pit())
        else:
            req.indices.extend([indices] if isinstance(indices, str) else indices or [])
        if query is not None:
            req.query.CopyFrom(query)
        if slices > 1:
            req.slice.CopyFrom(sluice_pb2.Slice(id=slice_id, max=slices))
        return req

    if slices == 1:
        for resp in client.stub.Scroll(request(0)):
            yield from resp.docs
        return

    # A bounded queue: the readers wait for the consumer, so memory is a
    # few batches per slice, not the scan.
    q: queue.Queue = queue.Queue(maxsize=2 * slices)
    stop = threading.Event()
    streams = []

    def read(slice_id: int) -> None:
        try:
            stream = client.stub.Scroll(request(slice_id))
            streams.append(stream)
            for resp in stream:
                if stop.is_set():
                    return
                q.put(resp.docs)
            q.put(_DONE)
        except BaseException as err:  # handed to the consumer
            q.put(err)

    threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(slices)]
    for t in threads:
        t.start()
    try:
        done = 0
        while done < slices:
            got = q.get()
            if got is _DONE:
                done += 1
            elif isinstance(got, BaseException):
                raise got
            else:
                yield from got
    finally:
        stop.set()
        for s in streams:
            s.cancel()
        while any(t.is_alive() for t in threads):
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass
        for t in threads:
            t.join()
