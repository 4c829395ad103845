"""sluice_client against a secure cluster (`sluice dev --secure`): TLS
with the cluster CA, API keys and client certificates.

e2e/esapi_test.go runs it with $SLUICE_ADDR, $SLUICE_CACERT (the CA),
$SLUICE_API_KEY (an admin key), $SLUICE_READ_KEY (a key of a role with
read and monitor on sec-*), $SLUICE_CERT and $SLUICE_KEY (the admin's
client certificate).
"""

import os

import grpc
import pytest

import sluice_client
from sluice_client import bulk, pb

ADDR, CA = os.environ["SLUICE_ADDR"], os.environ["SLUICE_CACERT"]


def test_api_key_over_tls():
    with sluice_client.connect(ADDR, ca_cert=CA, api_key=os.environ["SLUICE_API_KEY"]) as c:
        who = c.auth.Authenticate(pb.AuthenticateRequest())
        assert who.principal.startswith("api_key:") and "admin" in who.roles
        c.stub.CreateIndex(pb.CreateIndexRequest(name="sec-pyc", settings=pb.IndexSettings(number_of_shards=1)))
        r = bulk(c, [{"_id": "1", "_source": {"n": 1}}, {"_op_type": "update", "_id": "1", "doc": {"n": 2}}],
                 index="sec-pyc", refresh=True)
        assert r.applied == 2


def test_read_only_key_cannot_write():
    with sluice_client.connect(ADDR, ca_cert=CA, api_key=os.environ["SLUICE_READ_KEY"]) as c:
        c.stub.Get(pb.GetRequest(index="sec-pyc", id="1"))
        with pytest.raises(grpc.RpcError) as e:
            bulk(c, [{"_id": "2", "_source": {"n": 1}}], index="sec-pyc")
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED and "write" in e.value.details()


def test_client_certificate():
    with sluice_client.connect(ADDR, ca_cert=CA, client_cert=os.environ["SLUICE_CERT"], client_key=os.environ["SLUICE_KEY"]) as c:
        assert c.auth.Authenticate(pb.AuthenticateRequest()).principal == "cert:admin"


def test_no_credentials_are_refused():
    with sluice_client.connect(ADDR, ca_cert=CA) as c:
        with pytest.raises(grpc.RpcError) as e:
            c.stub.ListIndices(pb.ListIndicesRequest())
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(ValueError):
        sluice_client.connect(ADDR, client_cert="only-the-cert.pem")


def test_api_key_header():
    assert sluice_client.api_key_header(("id", "secret")) == "ApiKey aWQ6c2VjcmV0"
    assert sluice_client.api_key_header("aWQ6c2VjcmV0") == "ApiKey aWQ6c2VjcmV0"
