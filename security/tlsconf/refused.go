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

// RefusedMessage is Refused for an error's text. Only a TLS alert or a
// failed verification counts: a broken pipe or a reset is a connection
// lost (a node dying, in plaintext clusters too) and stays retryable.
// These texts arise only on TLS connections, and a TLS 1.3 refusal of
// our certificate reaches DialOptions' connections as the server's alert
// (see confirmed), not as a broken pipe.
func RefusedMessage(msg string) bool {
	for _, r := range refusals {
		if strings.Contains(msg, r) {
			return true
		}
	}
	return false
}
