package tlsconf

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRefused(t *testing.T) {
	for _, tt := range []struct {
		msg  string
		want bool
	}{
		{`[books][0] on node n1: connection error: desc = "error reading server preface: remote error: tls: bad certificate"`, true},
		{`connection error: desc = "error reading server preface: remote error: tls: certificate required"`, true},
		{`connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`, true},
		{`connection error: desc = "transport: authentication handshake failed: tls: server certificate: x509: certificate has expired or is not yet valid"`, true},
		{`connection error: desc = "transport: failed to write client preface: write tcp 127.0.0.1:1->127.0.0.1:2: write: broken pipe"`, false}, // a node lost, not a refusal
		{`connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:2: connect: connection refused"`, false},
		{`connection error: desc = "error reading from server: read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer"`, false},
		{`write tcp 127.0.0.1:1->127.0.0.1:2: write: broken pipe`, false},
		{`[books][0]: shard unavailable: no started copy`, false},
	} {
		if got := RefusedMessage(tt.msg); got != tt.want {
			t.Errorf("RefusedMessage(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
	if !Refused(status.Error(codes.Unavailable, `connection error: desc = "remote error: tls: unknown certificate authority"`)) || Refused(nil) ||
		Refused(errors.New("context deadline exceeded")) {
		t.Error("Refused misreads a status error, nil or an unrelated error")
	}
}
