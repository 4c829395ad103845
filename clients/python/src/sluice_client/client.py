"""The channel to a Sluice coordinator, and reading a status's RetryInfo."""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2, status_pb2

from sluice_client._pb.sluice.v1 import sluice_pb2_grpc

# Sluice's servers take and send messages of up to 64 MiB (gRPC's default
# is 4 MiB received); a bulk or a page of large documents needs the room.
MAX_MESSAGE_BYTES = 64 << 20

DEFAULT_ADDR = "127.0.0.1:9200"


class Client:
    """A channel to a coordinator and the Sluice stub over it.

    ``client.stub`` has every RPC of the Sluice service (``stub.Search(req)``).
    Close the client, or use it as a context manager.
    """

    def __init__(self, channel: grpc.Channel):
        self.channel = channel
        self.stub = sluice_pb2_grpc.SluiceStub(channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(addr: str = DEFAULT_ADDR, *, credentials: grpc.ChannelCredentials | None = None, options=()) -> Client:
    """Connects to a coordinator (host:port); TLS with credentials.

    The channel allows Sluice's message size both ways; options add to or
    override the gRPC channel options.
    """
    opts = dict([
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_timeout_ms", 10_000),
    ])
    opts.update(dict(options))
    items = list(opts.items())
    if credentials is not None:
        return Client(grpc.secure_channel(addr, credentials, options=items))
    return Client(grpc.insecure_channel(addr, options=items))


def retry_delay(err: grpc.RpcError) -> float | None:
    """The delay in seconds a failed call's google.rpc.RetryInfo asks for.

    Sluice answers overload with RESOURCE_EXHAUSTED and a RetryInfo detail
    in the status (the ``grpc-status-details-bin`` trailer); None when the
    error carries none.
    """
    trailers = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailers or ():
        if key != "grpc-status-details-bin":
            continue
        st = status_pb2.Status.FromString(value)
        for detail in st.details:
            info = error_details_pb2.RetryInfo()
            if detail.Unpack(info):
                return info.retry_delay.ToTimedelta().total_seconds()
    return None
