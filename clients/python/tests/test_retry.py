"""The retry rules of sluice_client.bulk against a scripted in-process
gRPC server (a narrow unit test: tests/test_cluster.py runs the real
cluster): a whole-call RESOURCE_EXHAUSTED with a google.rpc.RetryInfo,
and per-item RESOURCE_EXHAUSTED with a retry_delay, are waited out as
the server asks and sent again; other codes are final."""

import time
from concurrent import futures

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

import sluice_client
from sluice_client import BulkError, bulk, pb, pb_grpc, retry_delay


def overloaded(context, seconds):
    info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=0, nanos=int(seconds * 1e9)))
    detail = any_pb2.Any()
    detail.Pack(info)
    st = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message="bulk budget full", details=[detail])
    context.set_trailing_metadata((("grpc-status-details-bin", st.SerializeToString()),))
    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "bulk budget full")


class Scripted(pb_grpc.SluiceServicer):
    """Answers each Bulk call with the next step of a script."""

    def __init__(self, script):
        self.script, self.calls = list(script), []

    def Bulk(self, request, context):
        self.calls.append([it.id for it in request.items])
        return self.script.pop(0)(request, context)


@pytest.fixture
def serve():
    servers = []

    def start(script):
        svc = Scripted(script)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_SluiceServicer_to_server(svc, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return svc, sluice_client.connect(f"127.0.0.1:{port}")

    yield start
    for s in servers:
        s.stop(0)


def ok(request, context):
    return pb.BulkResponse(items=[pb.BulkItemResult(index="i", id=it.id, status=pb.BULK_ITEM_STATUS_CREATED) for it in request.items])


def test_a_refused_call_waits_for_its_retry_info(serve):
    svc, client = serve([lambda req, ctx: overloaded(ctx, 0.4), ok])
    start = time.monotonic()
    r = bulk(client, [{"_id": "a", "_source": {}}, {"_id": "b", "_source": {}}], initial_backoff=0.01)
    took = time.monotonic() - start
    assert r.applied == 2 and r.retries == 2
    assert svc.calls == [["a", "b"], ["a", "b"]]
    assert took >= 0.4 * 0.75, took  # the server's delay, less the jitter


def test_retry_delay_reads_the_status_detail(serve):
    _, client = serve([lambda req, ctx: overloaded(ctx, 1.5)])
    with pytest.raises(grpc.RpcError) as e:
        client.stub.Bulk(pb.BulkRequest(items=[pb.BulkItem(action=pb.BULK_ACTION_INDEX, id="a", source=b"{}")]))
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert retry_delay(e.value) == pytest.approx(1.5)


def test_only_overloaded_items_are_sent_again(serve):
    def partly(request, context):
        items = []
        for it in request.items:
            if it.id == "busy":
                items.append(pb.BulkItemResult(id=it.id, status=pb.BULK_ITEM_STATUS_ERROR, error=pb.ErrorDetail(
                    code=grpc.StatusCode.RESOURCE_EXHAUSTED.value[0], reason="node busy",
                    retry_delay=duration_pb2.Duration(nanos=300_000_000))))
            elif it.id == "bad":
                items.append(pb.BulkItemResult(id=it.id, status=pb.BULK_ITEM_STATUS_ERROR, error=pb.ErrorDetail(
                    code=grpc.StatusCode.INVALID_ARGUMENT.value[0], reason="not an object")))
            else:
                items.append(pb.BulkItemResult(id=it.id, status=pb.BULK_ITEM_STATUS_CREATED))
        return pb.BulkResponse(items=items, errors=True)

    svc, client = serve([partly, ok])
    start = time.monotonic()
    with pytest.raises(BulkError) as e:
        bulk(client, [{"_id": i, "_source": {}} for i in ("x", "busy", "bad", "y")], initial_backoff=0.01)
    assert time.monotonic() - start >= 0.3 * 0.75
    assert svc.calls == [["x", "busy", "bad", "y"], ["busy"]]
    assert e.value.result.applied == 3 and e.value.result.retries == 1
    assert [(x.item.id, x.code) for x in e.value.result.errors] == [("bad", grpc.StatusCode.INVALID_ARGUMENT)]


def test_retries_end(serve):
    svc, client = serve([lambda req, ctx: overloaded(ctx, 0.01)] * 3)
    with pytest.raises(grpc.RpcError) as e:
        bulk(client, [{"_id": "a", "_source": {}}], max_retries=2, initial_backoff=0.01)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and len(svc.calls) == 3


def test_other_errors_are_not_retried(serve):
    def unknown_index(request, context):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "items[0].action: unset")

    svc, client = serve([unknown_index])
    with pytest.raises(grpc.RpcError) as e:
        bulk(client, [{"_id": "a", "_source": {}}])
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and len(svc.calls) == 1
