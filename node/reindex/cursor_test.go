package reindex

import "testing"

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []cursor{{0, 0}, {1 << 63, 12345}, {42, 1<<31 - 1}} {
		got, ok, err := decodeCursor(c.encode())
		if err != nil || !ok || got != c {
			t.Errorf("%v: got %v %v %v", c, got, ok, err)
		}
	}
	if _, ok, err := decodeCursor(nil); ok || err != nil {
		t.Error("empty cursor must mean the start")
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(cursor{7, 99}.encode())
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok, err := decodeCursor(b)
		if err != nil || !ok {
			return
		}
		// Only canonical cursors decode: re-encoding gives the input back.
		if string(c.encode()) != string(b) {
			t.Errorf("%x decodes to %v which encodes to %x", b, c, c.encode())
		}
	})
}
