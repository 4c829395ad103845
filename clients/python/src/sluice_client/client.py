"""The channel to a Sluice coordinator, and reading a status's RetryInfo."""

from __future__ import annotations

import base64

import grpc
from google.rpc import error_details_pb2, status_pb2

from sluice_client._pb.sluice.v1 import auth_pb2_grpc, sluice_pb2_grpc

# Sluice's servers take and send messages of up to 64 MiB (gRPC's default
# is 4 MiB received); a bulk or a page of large documents needs the room.
MAX_MESSAGE_BYTES = 64 << 20

DEFAULT_ADDR = "127.0.0.1:9200"


class Client:
    """A channel to a coordinator and the Sluice stub over it.

    ``client.stub`` has every RPC of the Sluice service (``stub.Search(req)``),
    ``client.auth`` those of the Auth service (API keys and roles of a
    secure cluster). Close the client, or use it as a context manager.
    """

    def __init__(self, channel: grpc.Channel):
        self.channel = channel
        self.stub = sluice_pb2_grpc.SluiceStub(channel)
        self.auth = auth_pb2_grpc.AuthStub(channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _pem(v: str | bytes | None) -> bytes | None:
    """PEM bytes as given, or read from a file path."""
    if v is None or isinstance(v, bytes):
        return v
    with open(v, "rb") as f:
        return f.read()


def api_key_header(api_key: str | tuple[str, str]) -> str:
    """The authorization value of an API key: the encoded key as
    ``sluice auth create-key`` prints it (base64 of id:secret), or an
    (id, secret) pair, as the Elasticsearch clients take api_key."""
    if isinstance(api_key, tuple):
        api_key = base64.b64encode(f"{api_key[0]}:{api_key[1]}".encode()).decode()
    return "ApiKey " + api_key


class _APIKey(grpc.AuthMetadataPlugin):
    def __init__(self, header: str):
        self.header = header

    def __call__(self, context, callback):
        callback((("authorization", self.header),), None)


def connect(
    addr: str = DEFAULT_ADDR,
    *,
    credentials: grpc.ChannelCredentials | None = None,
    options=(),
    ca_cert: str | bytes | None = None,
    client_cert: str | bytes | None = None,
    client_key: str | bytes | None = None,
    api_key: str | tuple[str, str] | None = None,
) -> Client:
    """Connects to a coordinator (host:port).

    A secure cluster (docs/security.md): ca_cert is the cluster CA (a PEM
    file's path, or its bytes; None with TLS asked for: the system's roots)
    the server's certificate must chain to; client_cert and client_key a
    client certificate to authenticate with; api_key an API key (the
    encoded key ``sluice auth create-key`` prints, or (id, secret)), sent
    with every call. Any of them means TLS. credentials, if given, are the
    channel's TLS credentials instead of those built from the files.

    The channel allows Sluice's message size both ways; options add to or
    override the gRPC channel options.
    """
    if (client_cert is None) != (client_key is None):
        raise ValueError("client_cert and client_key go together")
    tls = credentials is not None or ca_cert is not None or client_cert is not None or api_key is not None
    if tls and credentials is None:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_pem(ca_cert), private_key=_pem(client_key), certificate_chain=_pem(client_cert))
    if api_key is not None:
        # gRPC sends call credentials over TLS only, as Sluice takes them.
        credentials = grpc.composite_channel_credentials(
            credentials, grpc.metadata_call_credentials(_APIKey(api_key_header(api_key)), name="sluice-api-key"))
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
