package server

import (
	"slices"
	"testing"
)

func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(0))
	f.Add(encodeCursor(123456))
	f.Add([]byte{1, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeCursor(b)
		if err == nil && len(b) > 0 && !slices.Equal(encodeCursor(n), b) {
			t.Fatalf("cursor %x decodes to %d which encodes to %x", b, n, encodeCursor(n))
		}
	})
}

// TestRoutingStoredAndReturned: a bulk item's routing is stored with the
// document and comes back from get, fetch and scan.
