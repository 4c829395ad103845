package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc/credentials"
)

// confirmed are gRPC client credentials whose TLS 1.3 handshake ends only
// once the server has spoken.
// In TLS 1.3 a server checks the client's certificate after the client's
// handshake has returned, so a refusal would otherwise reach the client
// as a broken pipe or a reset while it writes its preface —
// indistinguishable from a node dying mid-connection. A gRPC server sends
// its SETTINGS frame as soon as its own handshake (which includes that
// check) succeeds, so reading its first bytes here turns a refusal into
// the server's alert ("remote error: tls: bad certificate") and leaves a
// reset meaning what it says. A server that says nothing within
// confirmWait (one that waits for the client's preface first) accepted
// the certificate: the connection is used as it is.
type confirmed struct {
	credentials.TransportCredentials
}

// confirmWait bounds the wait for a server's first bytes.
var confirmWait = 2 * time.Second

func (c confirmed) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		return nil, nil, err
	}
	// TLS 1.2 refuses within the handshake. (Whether the server asked
	// for a certificate is not known here: gRPC's handshake has no
	// context to carry it.)
	if ti, ok := info.(credentials.TLSInfo); !ok || ti.State.Version < tls.VersionTLS13 {
		return conn, info, nil
	}
	deadline := time.Now().Add(confirmWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		conn.Close()
		return nil, nil, err
	}
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	var ne net.Error
	if err != nil && !(errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil) {
		conn.Close()
		return nil, nil, fmt.Errorf("tls: waiting for the server's first bytes: %w", err)
	}
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return &prefixed{Conn: conn, head: buf[:n]}, info, nil
}

func (c confirmed) Clone() credentials.TransportCredentials {
	return confirmed{c.TransportCredentials.Clone()}
}

// prefixed is a connection whose first bytes were already read.
type prefixed struct {
	net.Conn
	head []byte
}

func (p *prefixed) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
