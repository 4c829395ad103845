"""The official Elasticsearch Python client against the HTTP API of
`sluice dev --secure`: HTTPS verified with the dev CA (ca_certs=), API
keys (api_key=) authenticated and authorized by the coordinator's guard.

Run by e2e/esapi_test.go, which sets $ES_URL, $ES_CA, $ES_ADMIN_KEY and
$ES_READ_KEY (a key of a role with read and monitor on sec-*).
"""

import os

import pytest
from elasticsearch import AuthenticationException, AuthorizationException, Elasticsearch, helpers

URL, CA = os.environ["ES_URL"], os.environ["ES_CA"]
ADMIN_KEY, READ_KEY = os.environ["ES_ADMIN_KEY"], os.environ["ES_READ_KEY"]


def connect(**kwargs):
    return Elasticsearch(URL, ca_certs=CA, request_timeout=60, **kwargs)


@pytest.fixture(scope="module")
def admin():
    es = connect(api_key=ADMIN_KEY)
    es.indices.create(index="sec-books", settings={"number_of_shards": 2, "number_of_replicas": 0})
    ok, errors = helpers.bulk(es, ({"_index": "sec-books", "_id": str(i), "_source": {"title": f"book {i}"}} for i in range(100)), refresh=True)
    assert ok == 100 and not errors
    yield es
    es.close()


def test_without_a_key_every_call_is_refused_401(admin):
    es = connect()
    for call in (es.info, lambda: es.search(index="sec-books"), lambda: es.index(index="sec-books", id="x", document={})):
        with pytest.raises(AuthenticationException) as e:
            call()
        assert e.value.meta.status == 401
        assert e.value.error == "security_exception"
        assert e.value.meta.headers["WWW-Authenticate"] == "ApiKey"
    es.close()


def test_a_wrong_key_is_refused_401(admin):
    es = connect(api_key=("000000000000000000000000", "not-the-secret"))
    with pytest.raises(AuthenticationException):
        es.count(index="sec-books")
    es.close()


def test_admin_key_manages_writes_and_reads(admin):
    assert admin.info()["version"]["number"].startswith("8.")
    admin.index(index="sec-books", id="extra", document={"title": "extra"}, refresh=True)
    assert admin.count(index="sec-books")["count"] == 101
    assert admin.get(index="sec-books", id="extra")["_source"] == {"title": "extra"}
    scanned = list(helpers.scan(admin, index="sec-books", size=30, scroll="1m"))
    assert len(scanned) == 101
    admin.delete(index="sec-books", id="extra", refresh=True)


def test_read_only_key_reads_and_cannot_write(admin):
    es = connect(api_key=READ_KEY)
    assert es.count(index="sec-books")["count"] == 100
    assert es.search(index="sec-books", query={"match": {"title": "book"}}, size=1)["hits"]["total"]["value"] == 100
    assert len(list(helpers.scan(es, index="sec-books", size=40, scroll="1m"))) == 100
    writes = (
        lambda: es.index(index="sec-books", id="w", document={"title": "w"}),
        lambda: es.delete(index="sec-books", id="1"),
        lambda: helpers.bulk(es, [{"_index": "sec-books", "_id": "b", "_source": {}}]),
        lambda: es.indices.delete(index="sec-books"),
        lambda: es.indices.create(index="sec-new"),
    )
    for write in writes:
        with pytest.raises(AuthorizationException) as e:
            write()
        assert e.value.meta.status == 403
        assert e.value.error == "security_exception"
        assert "privilege" in str(e.value)
    # Nothing was written.
    assert admin.count(index="sec-books")["count"] == 100
    assert not admin.indices.exists(index="sec-new")
    es.close()


def test_read_only_key_sees_only_its_indices(admin):
    admin.indices.create(index="private", settings={"number_of_shards": 1, "number_of_replicas": 0})
    es = connect(api_key=READ_KEY)
    names = {row["index"] for row in es.cat.indices(format="json")}
    assert "sec-books" in names and "private" not in names
    with pytest.raises(AuthorizationException):
        es.search(index="private")
    es.close()
