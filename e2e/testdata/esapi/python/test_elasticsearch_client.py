"""The official Elasticsearch Python client (8.x) against Sluice's HTTP API.

Run by e2e/esapi_test.go against a real `sluice dev`, whose HTTP address
is in $ES_URL. Each test uses its own indices.
"""

import gzip
import json
import os
import urllib.request

import pytest
from elasticsearch import (
    ApiError,
    BadRequestError,
    ConflictError,
    Elasticsearch,
    NotFoundError,
    helpers,
)

URL = os.environ["ES_URL"]


@pytest.fixture(scope="module")
def es():
    client = Elasticsearch(URL, request_timeout=60)
    yield client
    client.close()


def create(es, name, shards=2, **kwargs):
    es.indices.create(
        index=name,
        settings={"number_of_shards": shards, "number_of_replicas": 0},
        mappings={
            "properties": {
                "title": {"type": "text"},
                "tag": {"type": "keyword"},
                "n": {"type": "long"},
                "price": {"type": "double"},
            }
        },
        **kwargs,
    )


def docs(n, index=None):
    for i in range(n):
        d = {"_id": f"d{i:05d}", "_source": {"title": f"document number {i}", "tag": "even" if i % 2 == 0 else "odd", "n": i, "price": i / 4}}
        if index:
            d["_index"] = index
        yield d


def test_info_passes_the_product_check(es):
    info = es.info()
    assert info["version"]["number"].startswith("8.")
    assert info["version"]["distribution"] == "sluice"
    assert es.ping()


def test_index_management(es):
    create(es, "py-idx", aliases={"py-idx-alias": {}})
    assert es.indices.exists(index="py-idx")
    assert not es.indices.exists(index="py-nope")
    got = es.indices.get(index="py-idx")["py-idx"]
    assert got["settings"]["index"]["number_of_shards"] == "2"
    assert got["mappings"]["properties"]["tag"] == {"type": "keyword"}
    assert "py-idx-alias" in got["aliases"]
    # By alias, the concrete index answers.
    assert list(es.indices.get(index="py-idx-alias")) == ["py-idx"]

    es.indices.put_mapping(index="py-idx", properties={"extra": {"type": "keyword"}})
    m = es.indices.get_mapping(index="py-idx")["py-idx"]["mappings"]
    assert m["properties"]["extra"] == {"type": "keyword"}

    es.indices.put_settings(index="py-idx", settings={"index": {"refresh_interval": "5s"}})
    s = es.indices.get_settings(index="py-idx")["py-idx"]["settings"]["index"]
    assert s["refresh_interval"] == "5s"

    with pytest.raises(BadRequestError) as e:
        create(es, "py-idx")
    assert e.value.error == "resource_already_exists_exception"
    with pytest.raises(NotFoundError) as e:
        es.indices.get(index="py-nope")
    assert e.value.error == "index_not_found_exception"
    # A setting Sluice lacks is refused, not ignored.
    with pytest.raises(BadRequestError) as e:
        es.indices.create(index="py-bad", settings={"index": {"codec": "best_compression"}})
    assert "unknown setting [index.codec]" in str(e.value.body)

    es.indices.delete(index="py-idx")
    assert not es.indices.exists(index="py-idx")


def test_documents(es):
    create(es, "py-docs")
    r = es.index(index="py-docs", id="1", document={"title": "first", "n": 1})
    assert r["result"] == "created"
    assert r.meta.status == 201
    r = es.index(index="py-docs", id="1", document={"title": "first again", "n": 1})
    assert r["result"] == "updated"
    # Realtime get: the write is seen without a refresh.
    g = es.get(index="py-docs", id="1")
    assert g["found"] and g["_source"] == {"title": "first again", "n": 1}
    assert es.get_source(index="py-docs", id="1") == {"title": "first again", "n": 1}
    assert es.exists(index="py-docs", id="1")
    assert not es.exists(index="py-docs", id="2")

    es.create(index="py-docs", id="2", document={"title": "second"})
    with pytest.raises(ConflictError) as e:
        es.create(index="py-docs", id="2", document={"title": "second again"})
    assert e.value.error == "version_conflict_engine_exception"
    auto = es.index(index="py-docs", document={"title": "no id"})
    assert auto["result"] == "created" and auto["_id"]

    assert es.delete(index="py-docs", id="2")["result"] == "deleted"
    with pytest.raises(NotFoundError):
        es.delete(index="py-docs", id="2")
    with pytest.raises(NotFoundError):
        es.get(index="py-docs", id="2")
    # A document that does not fit the mapping.
    with pytest.raises(BadRequestError):
        es.index(index="py-docs", id="3", document={"n": "not a number"})
    # Routing is kept and needed to find the document again by id.
    es.index(index="py-docs", id="r1", document={"title": "routed"}, routing="user-7", refresh=True)
    assert es.get(index="py-docs", id="r1", routing="user-7")["_routing"] == "user-7"


def test_bulk_helper_loads_and_reports_per_item(es):
    create(es, "py-bulk", shards=3)
    ok, errors = helpers.bulk(es, docs(5000), index="py-bulk", chunk_size=700)
    assert ok == 5000 and errors == []
    es.indices.refresh(index="py-bulk")
    assert es.count(index="py-bulk")["count"] == 5000

    actions = [
        {"_op_type": "create", "_index": "py-bulk", "_id": "d00001", "_source": {"title": "exists"}},
        {"_op_type": "index", "_index": "py-bulk", "_id": "bad", "_source": {"n": "x"}},
        {"_op_type": "delete", "_index": "py-bulk", "_id": "d00002"},
        {"_op_type": "update", "_index": "py-bulk", "_id": "d00003", "doc": {"n": 1}},
        {"_op_type": "index", "_index": "py-missing", "_id": "1", "_source": {"n": 1}},
    ]
    ok, errors = helpers.bulk(es, actions, raise_on_error=False, refresh="wait_for")
    assert ok == 2
    by_id = {list(e.values())[0]["_id"]: list(e.values())[0] for e in errors}
    assert by_id["d00001"]["status"] == 409
    assert by_id["d00001"]["error"]["type"] == "version_conflict_engine_exception"
    assert by_id["bad"]["status"] == 400
    assert "d00003" not in by_id
    assert es.get(index="py-bulk", id="d00003")["_source"]["n"] == 1
    assert by_id["1"]["status"] == 404 and by_id["1"]["error"]["type"] == "index_not_found_exception"
    assert es.count(index="py-bulk")["count"] == 4999

    # The raw response has Elasticsearch's shape.
    r = es.bulk(operations=[{"index": {"_index": "py-bulk", "_id": "x"}}, {"n": 1}, {"delete": {"_index": "py-bulk", "_id": "nope"}}])
    assert r["errors"] is False and isinstance(r["took"], int)
    assert r["items"][0]["index"]["status"] == 201 and r["items"][0]["index"]["result"] == "created"
    assert r["items"][1]["delete"]["status"] == 404 and r["items"][1]["delete"]["result"] == "not_found"

    # parallel_bulk: several threads at once.
    results = list(helpers.parallel_bulk(es, docs(2000, index="py-bulk"), thread_count=4, chunk_size=250))
    assert all(ok for ok, _ in results) and len(results) == 2000


def test_updates(es):
    create(es, "py-update")
    es.index(index="py-update", id="1", document={"title": "first", "n": 1, "meta": {"a": 1}})
    r = es.update(index="py-update", id="1", doc={"n": 2, "meta": {"b": 2}})
    assert r["result"] == "updated" and r.meta.status == 200
    assert es.get(index="py-update", id="1")["_source"] == {"title": "first", "n": 2, "meta": {"a": 1, "b": 2}}
    # The same change again changes nothing: noop.
    r = es.update(index="py-update", id="1", doc={"n": 2}, detect_noop=True, retry_on_conflict=3)
    assert r["result"] == "noop"
    with pytest.raises(NotFoundError) as e:
        es.update(index="py-update", id="missing", doc={"n": 1})
    assert e.value.error == "document_missing_exception"
    r = es.update(index="py-update", id="2", doc={"n": 5}, upsert={"title": "upserted", "n": 0})
    assert r["result"] == "created" and r.meta.status == 201
    assert es.get(index="py-update", id="2")["_source"] == {"title": "upserted", "n": 0}
    es.update(index="py-update", id="3", doc={"title": "doc as upsert"}, doc_as_upsert=True)
    assert es.get(index="py-update", id="3")["_source"] == {"title": "doc as upsert"}
    with pytest.raises(BadRequestError) as e:
        es.update(index="py-update", id="1", script={"source": "ctx._source.n += 1"})
    assert "scripts are not supported" in str(e.value)

    # Bulk update items, through the helper.
    actions = [
        {"_op_type": "update", "_index": "py-update", "_id": "1", "doc": {"n": 10}},
        {"_op_type": "update", "_index": "py-update", "_id": "1", "doc": {"n": 10}},
        {"_op_type": "update", "_index": "py-update", "_id": "4", "doc": {"n": 4}, "doc_as_upsert": True},
        {"_op_type": "update", "_index": "py-update", "_id": "5", "doc": {"n": 5}, "upsert": {"n": 0}},
        {"_op_type": "update", "_index": "py-update", "_id": "nope", "doc": {"n": 1}},
    ]
    ok, errors = helpers.bulk(es, actions, raise_on_error=False, refresh=True)
    assert ok == 4
    assert len(errors) == 1 and errors[0]["update"]["status"] == 404
    assert errors[0]["update"]["error"]["type"] == "document_missing_exception"
    r = es.bulk(operations=[{"update": {"_index": "py-update", "_id": "1"}}, {"doc": {"n": 10}}], refresh=True)
    assert r["items"][0]["update"]["result"] == "noop" and r["items"][0]["update"]["status"] == 200
    assert es.get(index="py-update", id="4")["_source"] == {"n": 4}
    assert es.get(index="py-update", id="5")["_source"] == {"n": 0}

    # docvalue_fields: the columns' values per hit.
    r = es.search(index="py-update", query={"ids": {"values": ["1"]}}, docvalue_fields=[{"field": "n"}, "price"])
    assert r["hits"]["hits"][0]["fields"] == {"n": [10]}
    for bad in (["n*"], ["title"]):  # a wildcard; a field without doc values
        with pytest.raises(BadRequestError):
            es.search(index="py-update", docvalue_fields=bad)


def test_optimistic_concurrency(es):
    create(es, "py-occ")
    r = es.index(index="py-occ", id="1", document={"n": 1})
    seq, term = r["_seq_no"], r["_primary_term"]
    assert seq >= 0 and term >= 1 and "_version" not in r
    g = es.get(index="py-occ", id="1")
    assert (g["_seq_no"], g["_primary_term"]) == (seq, term)
    # A write conditional on the current version applies; on an old one, 409.
    r = es.index(index="py-occ", id="1", document={"n": 2}, if_seq_no=seq, if_primary_term=term)
    assert r["result"] == "updated" and r["_seq_no"] > seq
    with pytest.raises(ConflictError) as e:
        es.index(index="py-occ", id="1", document={"n": 3}, if_seq_no=seq, if_primary_term=term)
    assert e.value.error == "version_conflict_engine_exception"
    assert f"required seqNo [{seq}]" in str(e.value)
    r2 = es.update(index="py-occ", id="1", doc={"n": 4}, if_seq_no=r["_seq_no"], if_primary_term=r["_primary_term"])
    assert r2["result"] == "updated" and r2["_primary_term"] == term
    with pytest.raises(ConflictError):
        es.update(index="py-occ", id="1", doc={"n": 5}, if_seq_no=r["_seq_no"], if_primary_term=r["_primary_term"])
    with pytest.raises(ConflictError):
        es.delete(index="py-occ", id="1", if_seq_no=seq, if_primary_term=term)
    # A noop answers the document's unchanged version.
    n = es.update(index="py-occ", id="1", doc={"n": 4})
    assert n["result"] == "noop" and (n["_seq_no"], n["_primary_term"]) == (r2["_seq_no"], r2["_primary_term"])
    # Bulk items: per-item conflicts, versions in every answer.
    b = es.bulk(operations=[
        {"index": {"_index": "py-occ", "_id": "1", "if_seq_no": r2["_seq_no"], "if_primary_term": term}}, {"n": 6},
        {"index": {"_index": "py-occ", "_id": "1", "if_seq_no": r2["_seq_no"], "if_primary_term": term}}, {"n": 7},
        {"delete": {"_index": "py-occ", "_id": "1", "version": 3}},
    ], refresh=True)
    items = [i["index"] if "index" in i else i["delete"] for i in b["items"]]
    assert items[0]["status"] == 200 and items[0]["_seq_no"] > r2["_seq_no"] and items[0]["_primary_term"] == term
    assert items[1]["status"] == 409 and items[1]["error"]["type"] == "version_conflict_engine_exception"
    assert items[2]["status"] == 400 and "if_seq_no" in items[2]["error"]["reason"]
    # Search hits carry them with seq_no_primary_term.
    h = es.search(index="py-occ", seq_no_primary_term=True)["hits"]["hits"][0]
    assert (h["_seq_no"], h["_primary_term"]) == (items[0]["_seq_no"], term) and "fields" not in h
    h = es.search(index="py-occ")["hits"]["hits"][0]
    assert "_seq_no" not in h
    with pytest.raises(BadRequestError):  # create has no version to compare with
        es.index(index="py-occ", id="2", document={"n": 1}, op_type="create", if_seq_no=0, if_primary_term=1)


def test_update_by_query(es):
    es.indices.create(
        index="py-ubq",
        settings={"number_of_shards": 2, "number_of_replicas": 0},
        mappings={"properties": {
            "tag": {"type": "keyword"},
            "price": {"type": "double", "index": False, "doc_values": True},
            "status": {"type": "keyword", "index": False, "doc_values": True},
            "title": {"type": "text"},
        }},
    )
    helpers.bulk(es, ({"_index": "py-ubq", "_id": str(i), "_source": {"tag": "even" if i % 2 == 0 else "odd", "price": i, "status": "new"}} for i in range(20)), refresh=True)
    # doc_values is Sluice's: the client has no parameter for it, so the whole body goes as body.
    r = es.update_by_query(index="py-ubq", body={"query": {"term": {"tag": "even"}}, "doc_values": {"price": 0.5, "status": "sale"}}, slices=2)
    assert r["updated"] == 10 and r["total"] == 10 and r["failures"] == [] and "took" in r
    hits = es.search(index="py-ubq", query={"term": {"status": "sale"}}, sort=[{"price": "asc"}], docvalue_fields=["price", "status"], size=20)["hits"]["hits"]
    assert len(hits) == 10 and all(h["fields"] == {"price": [0.5], "status": ["sale"]} for h in hits)
    # _source keeps the document as indexed.
    assert es.get(index="py-ubq", id="0")["_source"]["price"] == 0
    # As a task.
    t = es.update_by_query(index="py-ubq", body={"doc_values": {"status": "seen"}}, wait_for_completion=False)
    done = es.tasks.get(task_id=t["task"], wait_for_completion=True, timeout="60s")
    assert done["completed"] and done["response"]["updated"] == 20
    assert done["task"]["action"] == "indices:data/write/update/byquery"
    assert es.count(index="py-ubq", query={"term": {"status": "seen"}})["count"] == 20
    # A script (Elasticsearch's form) is refused saying what to send instead.
    with pytest.raises(BadRequestError) as e:
        es.update_by_query(index="py-ubq", script={"source": "ctx._source.price += 1"})
    assert "doc_values" in str(e.value)
    with pytest.raises(BadRequestError) as e:  # indexed: not updatable in place
        es.update_by_query(index="py-ubq", body={"doc_values": {"tag": "x"}})
    assert "tag" in str(e.value)


def test_search(es):
    create(es, "py-search")
    helpers.bulk(es, docs(100), index="py-search", refresh=True)

    r = es.search(index="py-search", query={"match": {"title": "number"}}, size=5)
    assert r["hits"]["total"] == {"value": 100, "relation": "eq"}
    assert len(r["hits"]["hits"]) == 5 and r["hits"]["max_score"] > 0
    assert r["_shards"]["total"] == 2 and r["_shards"]["failed"] == 0

    r = es.search(
        index="py-search",
        query={"bool": {"filter": [{"term": {"tag": "even"}}, {"range": {"n": {"gte": 10, "lt": 20}}}]}},
        sort=[{"n": "desc"}],
        size=3,
        from_=1,
        source=["n"],
    )
    assert [h["_source"] for h in r["hits"]["hits"]] == [{"n": 16}, {"n": 14}, {"n": 12}]
    assert r["hits"]["hits"][0]["_score"] is None and r["hits"]["hits"][0]["sort"] == [16]

    r = es.search(index="py-search", query={"ids": {"values": ["d00007"]}}, source_excludes=["title", "price"])
    assert r["hits"]["hits"][0]["_source"] == {"tag": "odd", "n": 7}
    r = es.search(index="py-search", query={"terms": {"n": [1, 2]}}, source=False)
    assert "_source" not in r["hits"]["hits"][0]
    r = es.search(index="py-search", query={"match_phrase": {"title": "number 42"}}, track_total_hits=True)
    assert r["hits"]["total"]["value"] == 1
    r = es.search(index="py-search", track_total_hits=False, size=0)
    assert "total" not in r["hits"]
    r = es.search(index="py-search", rest_total_hits_as_int=True, size=0)
    assert r["hits"]["total"] == 100
    assert es.search(index="py-sea*", size=0)["hits"]["total"]["value"] == 100
    assert es.search(index="py-none-*", size=0)["hits"]["total"]["value"] == 0

    assert es.count(index="py-search", query={"term": {"tag": "odd"}})["count"] == 50
    assert es.count(index="py-search")["count"] == 100

    # What Sluice lacks is refused with Elasticsearch's error shape.
    with pytest.raises(BadRequestError) as e:
        es.search(index="py-search", aggs={"tags": {"terms": {"field": "tag"}}})
    assert e.value.error == "parsing_exception"
    assert e.value.body["error"]["root_cause"][0]["type"] == "parsing_exception"
    assert e.value.body["status"] == 400
    with pytest.raises(BadRequestError) as e:
        es.search(index="py-search", query={"fuzzy": {"title": "nmber"}})
    assert "unknown query [fuzzy]" in e.value.body["error"]["reason"]
    with pytest.raises(BadRequestError) as e:
        es.perform_request("GET", "/py-search/_search", params={"no_such_param": "1"}, headers={"accept": "application/json"})
    assert "unrecognized parameter: [no_such_param]" in e.value.body["error"]["reason"]
    with pytest.raises(NotFoundError) as e:
        es.search(index="py-nope")
    assert e.value.error == "index_not_found_exception"


def test_point_in_time_with_search_after(es):
    create(es, "py-pit", shards=3)
    helpers.bulk(es, docs(250), index="py-pit", refresh=True)
    pit = es.open_point_in_time(index="py-pit", keep_alive="1m")["id"]
    # Written after the PIT opened: not in it.
    es.index(index="py-pit", id="late", document={"n": 1000}, refresh=True)
    seen, after = [], None
    while True:
        kw = {"search_after": after} if after else {}
        r = es.search(pit={"id": pit, "keep_alive": "1m"}, sort=[{"n": "asc"}, "_shard_doc"], size=40, **kw)
        hits = r["hits"]["hits"]
        if not hits:
            break
        pit = r["pit_id"]
        seen += [h["_source"]["n"] for h in hits]
        after = hits[-1]["sort"]
    assert seen == list(range(250))
    assert es.close_point_in_time(id=pit)["succeeded"]
    with pytest.raises(NotFoundError):
        es.search(pit={"id": pit}, size=1)


def test_scan_and_sliced_scroll(es):
    create(es, "py-scroll", shards=3)
    helpers.bulk(es, docs(1234), index="py-scroll", refresh=True)
    ids = [h["_id"] for h in helpers.scan(es, index="py-scroll", query={"query": {"match_all": {}}}, size=100)]
    assert len(ids) == 1234 and len(set(ids)) == 1234
    odd = list(helpers.scan(es, index="py-scroll", query={"query": {"term": {"tag": "odd"}}, "_source": ["n"]}, size=50))
    assert len(odd) == 617 and all(set(h["_source"]) == {"n"} for h in odd)

    # Sliced scroll by hand: every document exactly once over the slices.
    seen = []
    for i in range(4):
        r = es.search(index="py-scroll", scroll="1m", size=200, slice={"id": i, "max": 4}, sort=["_doc"])
        sid = r["_scroll_id"]
        while r["hits"]["hits"]:
            seen += [h["_id"] for h in r["hits"]["hits"]]
            r = es.scroll(scroll_id=sid, scroll="1m")
            sid = r["_scroll_id"]
        es.options(ignore_status=404).clear_scroll(scroll_id=sid)
    assert sorted(seen) == sorted(ids)

    r = es.search(index="py-scroll", scroll="1m", size=10)
    assert es.clear_scroll(scroll_id=r["_scroll_id"])["num_freed"] == 1
    with pytest.raises(BadRequestError):
        es.search(index="py-scroll", scroll="1m", sort=[{"n": "asc"}])


def test_aliases(es):
    create(es, "py-a1")
    create(es, "py-a2")
    es.index(index="py-a1", id="1", document={"n": 1}, refresh=True)
    es.index(index="py-a2", id="2", document={"n": 2}, refresh=True)
    es.indices.update_aliases(actions=[
        {"add": {"index": "py-a1", "alias": "py-both"}},
        {"add": {"index": "py-a2", "alias": "py-both", "is_write_index": True}},
    ])
    assert es.count(index="py-both")["count"] == 2
    # Writes through the alias go to its write index.
    es.index(index="py-both", id="3", document={"n": 3}, refresh=True)
    assert es.count(index="py-a2")["count"] == 2
    al = es.indices.get_alias(name="py-both")
    assert al["py-a2"]["aliases"]["py-both"] == {"is_write_index": True}
    assert es.indices.exists_alias(name="py-both")
    assert not es.indices.exists_alias(name="py-neither")
    es.indices.put_alias(index="py-a1", name="py-one")
    assert set(es.indices.get_alias(index="py-a1")["py-a1"]["aliases"]) == {"py-both", "py-one"}
    es.indices.delete_alias(index="py-a1", name="py-one")
    with pytest.raises(NotFoundError):
        es.indices.get_alias(name="py-one")
    with pytest.raises(BadRequestError):
        es.indices.update_aliases(actions=[{"add": {"index": "py-a1", "alias": "f", "filter": {"term": {"n": 1}}}}])


def test_reindex_and_tasks(es):
    create(es, "py-src", shards=2)
    helpers.bulk(es, docs(300), index="py-src", refresh=True)
    r = es.reindex(source={"index": "py-src", "query": {"term": {"tag": "even"}}}, dest={"index": "py-dst"}, wait_for_completion=True)
    assert r["created"] == 150 and r["failures"] == []
    assert es.count(index="py-dst")["count"] == 150

    t = es.reindex(source={"index": "py-src"}, dest={"index": "py-dst2"}, wait_for_completion=False)["task"]
    done = es.tasks.get(task_id=t, wait_for_completion=True, timeout="60s")
    assert done["completed"] and done["response"]["created"] == 300
    assert done["task"]["action"] == "indices:data/write/reindex"
    with pytest.raises(BadRequestError):
        es.reindex(source={"index": "py-src"}, dest={"index": "py-dst3"}, script={"source": "ctx._source.n++"})


def test_cluster_health_and_cat(es):
    create(es, "py-cat")
    es.index(index="py-cat", id="1", document={"n": 1}, refresh=True)
    h = es.cluster.health(wait_for_status="green", timeout="30s")
    assert h["status"] == "green" and not h["timed_out"] and h["number_of_data_nodes"] == 3
    h = es.cluster.health(index="py-cat", level="indices")
    assert h["indices"]["py-cat"]["status"] == "green"
    rows = es.cat.indices(index="py-cat", format="json")
    assert rows[0]["index"] == "py-cat" and rows[0]["docs.count"] == "1" and rows[0]["health"] == "green"
    text = es.cat.indices(v=True, h="index,docs.count", s="index")
    assert text.splitlines()[0].split() == ["index", "docs.count"]
    assert es.cat.health(format="json")[0]["status"] == "green"


def test_gzip_both_ways(es):
    create(es, "py-gzip")
    gz = Elasticsearch(URL, http_compress=True, request_timeout=30)
    ok, _ = helpers.bulk(gz, docs(500), index="py-gzip", refresh=True)
    assert ok == 500
    assert gz.search(index="py-gzip", size=500)["hits"]["total"]["value"] == 500
    # A gzipped answer, read by hand.
    req = urllib.request.Request(URL + "/py-gzip/_search?size=100", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req) as resp:
        assert resp.headers["Content-Encoding"] == "gzip"
        body = json.loads(gzip.decompress(resp.read()))
    assert len(body["hits"]["hits"]) == 100
    gz.close()


def test_unknown_endpoint_is_refused(es):
    with pytest.raises(ApiError) as e:
        es.perform_request("GET", "/_nodes/stats", headers={"accept": "application/json"})
    assert e.value.meta.status == 400
    assert "no handler found" in e.value.body["error"]["reason"]
