package replication

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine"
)

// TestRecoveryFetchesHoldTheRate: recovery file fetches, two files fetched
// at once as a recovery of two shards would, hold the node's
// RecoveryBytesPerSec together within 10 %, in GetFiles-sized chunks
// larger than the throttle's bucket.
func TestRecoveryFetchesHoldTheRate(t *testing.T) {
	const rate = 2 << 20
	s := New(Config{RecoveryBytesPerSec: rate})
	chunk := make([]byte, fileChunkBytes)
	fetch := s.throttled(func(ctx context.Context, f engine.FileMeta, w io.Writer) error {
		for n := int64(0); n < f.Length; n += fileChunkBytes {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	})
	const perFile = 3 << 20 // 3 s at 2 MiB/s for both files
	start := time.Now()
	errs := make(chan error, 2)
	for _, name := range []string{"_0.cfs", "_1.cfs"} {
		go func() { errs <- fetch(context.Background(), engine.FileMeta{Name: name, Length: perFile}, io.Discard) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := 2 * perFile / time.Since(start).Seconds()
	t.Logf("rate %d B/s, achieved %.0f B/s", rate, got)
	if got < 0.9*rate || got > 1.1*rate {
		t.Errorf("rate %d B/s, achieved %.0f B/s", rate, got)
	}
}
