"""sluice_client against a real Sluice (`sluice dev`), whose gRPC address
is in $SLUICE_ADDR. e2e/python_client_test.go runs it, with the package
installed from this directory by pip. Each test uses its own indices."""

import importlib.util
import json
import os
import threading

import grpc
import pytest

import sluice_client
from sluice_client import BulkError, bulk, pb, point_in_time, scan

ADDR = os.environ["SLUICE_ADDR"]


@pytest.fixture(scope="module")
def client():
    with sluice_client.connect(ADDR) as c:
        yield c


def create(client, name, shards=3):
    client.stub.CreateIndex(pb.CreateIndexRequest(
        name=name, wait_for_active_shards=True,
        settings=pb.IndexSettings(number_of_shards=shards),
        mapping=pb.Mapping(properties={
            "title": pb.FieldMapping(type=pb.FIELD_TYPE_TEXT),
            "tag": pb.FieldMapping(type=pb.FIELD_TYPE_KEYWORD),
            "n": pb.FieldMapping(type=pb.FIELD_TYPE_LONG),
        })))


def docs(n, start=0):
    for i in range(start, start + n):
        yield {"_id": f"d{i:05d}", "_source": {"title": f"document {i}", "tag": "even" if i % 2 == 0 else "odd", "n": i}}


def count(client, index, query=None):
    client.stub.Refresh(pb.RefreshRequest(indices=[index]))
    req = pb.SearchRequest(indices=[index], size=0, track_total_hits=-1)
    if query is not None:
        req.query.CopyFrom(query)
    return client.stub.Search(req).total.value


def test_installed_as_one_package_without_a_top_level_sluice():
    # Run against the package pip installed, not the source tree.
    assert os.sep + "src" + os.sep not in sluice_client.__file__
    assert importlib.util.find_spec("sluice") is None
    assert sluice_client.pb.BulkItem.DESCRIPTOR.full_name == "sluice.v1.BulkItem"
    # The descriptor pool holds the .proto files under proto/'s names.
    assert sluice_client.pb.BulkItem.DESCRIPTOR.file.name == "sluice/v1/sluice.proto"


def test_bulk_reports_each_failed_item_in_input_order(client):
    create(client, "pyc-bulk")
    r = bulk(client, docs(3000), index="pyc-bulk", chunk_size=700)
    assert r.applied == 3000 and r.errors == []
    assert count(client, "pyc-bulk") == 3000

    actions = [
        {"_op_type": "create", "_id": "d00001", "_source": {"title": "exists"}},
        {"_id": "bad", "_source": {"n": "not a number"}},
        {"_op_type": "delete", "_id": "d00002"},
        {"_op_type": "delete", "_id": "never-there"},
        {"_index": "pyc-missing", "_id": "x", "_source": {"n": 1}},
        {"_id": "plain", "title": "fields without _source", "n": 7},
        pb.BulkItem(action=pb.BULK_ACTION_INDEX, id="raw", source=b'{"n": 8}'),
        {"_id": "broken", "_source": '{"n": '},
    ]
    with pytest.raises(BulkError) as e:
        bulk(client, actions, index="pyc-bulk", refresh="wait_for")
    res = e.value.result
    assert res.applied == 4  # the delete of an absent id counts: it was applied
    assert [x.item.id for x in res.errors] == ["d00001", "bad", "x", "broken"]
    assert [x.code for x in res.errors] == [grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.INVALID_ARGUMENT,
                                             grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT]
    assert "pyc-missing" in res.errors[2].reason
    assert count(client, "pyc-bulk") == 3000 - 1 + 2
    got = client.stub.Get(pb.GetRequest(index="pyc-bulk", id="plain"))
    assert json.loads(got.source) == {"title": "fields without _source", "n": 7}

    r = bulk(client, [{"_id": "bad2", "_source": {"n": "x"}}], index="pyc-bulk", raise_on_error=False)
    assert r.applied == 0 and len(r.errors) == 1


def test_bulk_updates(client):
    create(client, "pyc-update", shards=2)
    bulk(client, [{"_id": "1", "_source": {"title": "one", "n": 1}}], index="pyc-update")
    r = bulk(client, [
        {"_op_type": "update", "_id": "1", "doc": {"n": 2}},
        {"_op_type": "update", "_id": "1", "_source": {"doc": {"n": 2}}},  # changes nothing
        {"_op_type": "update", "_id": "2", "doc": {"n": 5}, "upsert": {"title": "two", "n": 0}},
        {"_op_type": "update", "_id": "3", "doc": {"title": "three"}, "doc_as_upsert": True},
        {"_op_type": "update", "_id": "missing", "doc": {"n": 1}},
    ], index="pyc-update", refresh=True, raise_on_error=False)
    assert r.applied == 4 and r.noop == 1
    assert [e.item.id for e in r.errors] == ["missing"] and r.errors[0].code == grpc.StatusCode.FAILED_PRECONDITION

    def source(doc_id):
        return json.loads(client.stub.Get(pb.GetRequest(index="pyc-update", id=doc_id)).source)

    assert source("1") == {"title": "one", "n": 2}
    assert source("2") == {"title": "two", "n": 0}
    assert source("3") == {"title": "three"}
    for bad in ({"script": {"source": "ctx._source.n++"}}, {"upsert": {"n": 1}}, {"doc": {"n": 1}, "detect_noop": False}):
        with pytest.raises(ValueError):
            bulk(client, [{"_op_type": "update", "_id": "1", **bad}], index="pyc-update")


def test_bulk_retries_what_an_overloaded_coordinator_refuses(client):
    # The dev runs with a small bulk budget (--max-inflight-bulk-bytes), so
    # that many large bulks at once are refused with RESOURCE_EXHAUSTED and
    # a RetryInfo; the helper waits as asked and sends them again.
    create(client, "pyc-overload", shards=2)
    body = "lorem ipsum " * 250
    results, failures = [], []

    def load(w):
        try:
            results.append(bulk(client, ({"_id": f"w{w}-{i}", "_source": {"title": body}} for i in range(1200)),
                                index="pyc-overload", chunk_size=400, max_backoff=2.0))
        except Exception as err:  # reported below
            failures.append(err)

    threads = [threading.Thread(target=load, args=(w,)) for w in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert sum(r.applied for r in results) == 12 * 1200
    assert sum(r.retries for r in results) > 0, "no bulk was refused: the load did not overload the coordinator"
    assert count(client, "pyc-overload") == 12 * 1200


def test_sliced_scan_reads_every_document_once(client):
    create(client, "pyc-scan", shards=3)
    bulk(client, docs(2500), index="pyc-scan", refresh=True)
    for slices in (1, 2, 4, 7):
        ids = [d.id for d in scan(client, "pyc-scan", slices=slices, batch_size=300)]
        assert len(ids) == 2500 and len(set(ids)) == 2500, slices
    odd = list(scan(client, ["pyc-scan"], slices=3, query=pb.Query(term=pb.TermQuery(field="tag", value=pb.FieldValue(string_value="odd"))),
                    fetch_source=False))
    assert len(odd) == 1250 and all(d.source == b"" for d in odd)
    # Leaving a scan early ends its streams.
    it = scan(client, "pyc-scan", slices=4, batch_size=10)
    assert next(it).id
    it.close()


def test_point_in_time_pages_a_fixed_view(client):
    create(client, "pyc-pit", shards=3)
    bulk(client, docs(450), index="pyc-pit", refresh=True)
    with point_in_time(client, "pyc-pit", keep_alive=30) as pit:
        # Written after the point-in-time opened: not in it.
        bulk(client, docs(50, start=450), index="pyc-pit", refresh=True)
        sort = [pb.SortField(field="n", order=pb.SORT_ORDER_ASC), pb.SortField(field="_shard_doc")]
        seen = [json.loads(h.source)["n"] for page in pit.pages(sort=sort, size=100) for h in page]
        assert seen == list(range(450))
        assert pit.search(size=0, track_total_hits=-1).total.value == 450
        # A sliced scan of the same view.
        assert sum(1 for _ in scan(client, pit=pit, slices=2)) == 450
        closed = pit.id
    assert count(client, "pyc-pit") == 500
    with pytest.raises(grpc.RpcError) as e:
        client.stub.Search(pb.SearchRequest(pit=pb.PointInTime(id=closed), size=1))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
