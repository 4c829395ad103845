package codec

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/codec/codectest"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

// TestChecksumWriter: a file streamed through the writer in chunks of any
// size checks as VerifyChecksum checks it — the footer's checksum when
// clean, a corruption naming the file for a flipped bit anywhere, a
// missing or an extra byte.
func TestChecksumWriter(t *testing.T) {
	r := codectest.Rand(t)
	m := codectest.Random(r, codectest.RandomOptions{Docs: 200, RandomTerms: 20, MaxFreq: 5, SourceSize: 100})
	c := New(Options{})
	dir := store.NewRAMDirectory()
	info := newInfo(r, "_w", m.MaxDoc())
	writeModel(t, c, dir, info, m)
	stream := func(name string, data []byte, length int64, chunk int) (uint32, error) {
		w, check := c.ChecksumWriter(name, length)
		for off := 0; off < len(data); off += chunk {
			if _, err := w.Write(data[off:min(off+chunk, len(data))]); err != nil {
				t.Fatal(err)
			}
		}
		return check()
	}
	for _, name := range info.Files {
		in, err := dir.OpenInput(name)
		if err != nil {
			t.Fatal(err)
		}
		data := append([]byte(nil), in.Bytes()...)
		in.Close()
		want, err := c.FooterChecksum(name, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{1, 3, 7, 16, 100, len(data)} {
			if got, err := stream(name, data, int64(len(data)), chunk); err != nil || got != want {
				t.Fatalf("%s in chunks of %d: %#x, %v; want %#x", name, chunk, got, err, want)
			}
		}
		for _, at := range []int{0, 3, 4, len(data) / 2, len(data) - footerLen, len(data) - 9, len(data) - 8, len(data) - 1} {
			bad := append([]byte(nil), data...)
			bad[at] ^= 1 << r.IntN(8)
			if _, err := stream(name, bad, int64(len(bad)), 1+r.IntN(64)); !errors.Is(err, index.ErrCorrupt) || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s: bit flipped at %d of %d: %v", name, at, len(data), err)
			}
		}
		if _, err := stream(name, data[:len(data)-1], int64(len(data)), 10); !errors.Is(err, index.ErrCorrupt) {
			t.Fatalf("%s: a byte short: %v", name, err)
		}
		if _, err := stream(name, append(data, 0), int64(len(data)), 10); !errors.Is(err, index.ErrCorrupt) {
			t.Fatalf("%s: a byte long: %v", name, err)
		}
	}
}
