package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/bitflip"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// TestReplicaDamageFailsCopy: a replica's files, verified when fetched,
// are damaged on its disk afterwards (a bit flipped in its stored-fields
// file); the scrubber, or an on-demand Verify, finds it, and the replica
// fails for good: it refuses operations (its primary then fails it out of
// the in-sync set), installs, new readers and — above all — promotion,
// and its store stays marked corrupted across a reopen.
func TestReplicaDamageFailsCopy(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"scrub", "verify"} {
		t.Run(how, func(t *testing.T) {
			e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
			defer e.Close(ctx)
			dir := t.TempDir()
			var failures atomic.Int32
			r := mustOpenReplica(t, dir, Options{OnFailure: func(error) { failures.Add(1) }})
			defer r.Close(ctx)
			for i := range 200 {
				applyOps(t, e, []engineOp{{id: strconv.Itoa(i), title: fmt.Sprintf("one two three four five %d", i)}})
			}
			checkpointTo(t, e, r)
			if _, err := r.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			name := bitflip.Largest(t, dir, ".fdt")

			switch how {
			case "scrub":
				sc := NewScrubber(ScrubOptions{Poll: 5 * time.Millisecond, Interval: time.Hour, BytesPerSec: -1},
					func() []ScrubTarget { return []ScrubTarget{r} })
				defer sc.Close()
				deadline := time.Now().Add(10 * time.Second)
				for failures.Load() == 0 && time.Now().Before(deadline) { // OnFailure runs once Failure is set
					time.Sleep(5 * time.Millisecond)
				}
			case "verify":
				res, err := r.Verify(ctx, VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !errors.Is(res.Err(), index.ErrCorrupt) {
					t.Fatalf("verify found no damage: %+v", res.Files)
				}
			}
			ferr := r.Failure()
			if !errors.Is(ferr, ErrFailed) || !errors.Is(ferr, index.ErrCorrupt) {
				t.Fatalf("replica failure after damage to %s: %v", name, ferr)
			}
			if failures.Load() != 1 {
				t.Fatalf("OnFailure called %d times", failures.Load())
			}
			if st := r.Stats(); st.CorruptFiles != 1 || st.VerifiedFiles == 0 {
				t.Fatalf("stats: %+v", st.CheckStats)
			}
			op := translog.Op{Type: translog.OpNoOp, SeqNo: 1000, PrimaryTerm: uint64(e.PrimaryTerm())}
			if _, err := r.ApplyOps(ctx, e.PrimaryTerm(), []translog.Op{op}); !errors.Is(err, ErrFailed) {
				t.Fatalf("operations on a failed replica: %v", err)
			}
			if _, err := r.AcquireReader(); !errors.Is(err, ErrFailed) {
				t.Fatalf("reader of a failed replica: %v", err)
			}
			cp := refreshCheckpoint(t, e)
			_, err := r.InstallCheckpoint(ctx, cp, fetchFrom(e, nil))
			cp.Release()
			if !errors.Is(err, ErrFailed) {
				t.Fatalf("install on a failed replica: %v", err)
			}
			if eng, err := r.Promote(ctx, e.PrimaryTerm()+1); !errors.Is(err, ErrFailed) {
				if eng != nil {
					eng.Close(ctx)
				}
				t.Fatalf("promotion of a failed replica: %v", err)
			}
			if err := r.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if r2, err := OpenReplica(ctx, durableOptions(t, dir, Options{})); !errors.Is(err, ErrMarkedCorrupted) {
				if r2 != nil {
					r2.Close(ctx)
				}
				t.Fatalf("reopen of a replica marked corrupted: %v", err)
			}
		})
	}
}
