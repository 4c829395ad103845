package tlsconf

import "strings"

// refusals are what a failed TLS handshake says, as gRPC passes it on in a
// status message ("connection error: desc = ... remote error: tls: bad
// certificate"), across processes: the peer's alert, or this side's
// verification of the peer's certificate.
var refusals = []string{
	"remote error: tls: ",                            // the peer refused us: bad or unknown certificate, certificate required, ...
	"tls: failed to verify certificate",              // crypto/tls refused the peer's chain
	"tls: server certificate: ",                      // ClientConfig refused the server's chain
	"tls: client certificate is not of organization", // a data node refused a user's certificate
	"x509: ", // a chain that does not verify
}

// Refused says whether err (or a message carrying one, such as a bulk
// item's reason) is a TLS handshake refused for its certificates, on
// either side. Retrying does not help until certificates or CAs change,
// so callers fail at once, saying so, rather than retry as they would a
// broken connection.
func Refused(err error) bool { return err != nil && RefusedMessage(err.Error()) }

// RefusedMessage is Refused for an error's text. A connection closed
// while the client writes its first bytes after the handshake counts too:
// in TLS 1.3 the server checks the client's certificate after the client
// has finished its handshake, so its refusal can reach the client as a
// broken pipe before the alert is read.
func RefusedMessage(msg string) bool {
	for _, r := range refusals {
		if strings.Contains(msg, r) {
			return true
		}
	}
	return strings.Contains(msg, "failed to write client preface") &&
		(strings.Contains(msg, "broken pipe") || strings.Contains(msg, "connection reset by peer"))
}
