"""Python client of Sluice's public gRPC API (proto/sluice/v1).

The generated stubs are ``sluice_client.pb`` (messages, from
``sluice/v1/*.proto``) and ``sluice_client.pb_grpc`` (the ``SluiceStub``
and ``AuthStub``);
they live under ``sluice_client._pb`` so that no top-level ``sluice``
module is installed to collide with anything. The helpers are thin:

- ``connect``: a channel with Sluice's message size limit, and the stubs;
  TLS (the cluster CA, a client certificate) and an API key for a secure
  cluster;
- ``bulk``: batches (index, create, delete, update with doc/upsert/
  doc_as_upsert, update_doc_values), per-item results and errors, and retries of what the
  cluster refused as overloaded (RESOURCE_EXHAUSTED, UNAVAILABLE), after
  the delay the server asked for (``google.rpc.RetryInfo``, or an item's
  ``ErrorDetail.retry_delay``);
- ``scan``: every matching document, by a sliced scroll read concurrently
  over one point-in-time;
- ``point_in_time``: a point-in-time opened and closed around a block, and
  searches of it that follow its id.
"""

from sluice_client._pb.sluice.v1 import auth_pb2, auth_pb2_grpc, query_pb2, sluice_pb2, sluice_pb2_grpc, types_pb2
from sluice_client.client import MAX_MESSAGE_BYTES, Client, api_key_header, connect, retry_delay
from sluice_client.helpers import (
    BulkError,
    BulkItemError,
    BulkResult,
    PointInTime,
    bulk,
    point_in_time,
    scan,
)


class _Names:
    """The public names of generated modules as attributes: every message
    and enum of sluice.v1 (pb.BulkItem), every stub (pb_grpc.SluiceStub)."""

    def __init__(self, *modules):
        for m in modules:
            for name in dir(m):
                if not name.startswith("_") and name not in ("DESCRIPTOR", "sys"):
                    setattr(self, name, getattr(m, name))


pb = _Names(types_pb2, query_pb2, sluice_pb2, auth_pb2)
pb_grpc = _Names(sluice_pb2_grpc, auth_pb2_grpc)

__all__ = [
    "MAX_MESSAGE_BYTES",
    "BulkError",
    "BulkItemError",
    "BulkResult",
    "Client",
    "PointInTime",
    "api_key_header",
    "bulk",
    "connect",
    "pb",
    "pb_grpc",
    "point_in_time",
    "retry_delay",
    "scan",
]
