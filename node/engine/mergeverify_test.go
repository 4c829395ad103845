package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-search/sluice/node/engine/bitflip"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/mergepolicy"
	"github.com/sluice-search/sluice/node/engine/mergescheduler"
)

// mergeAll merges every segment not merging once there are two.
type mergeAll struct{}

func (mergeAll) FindMerges(segs []mergepolicy.Segment, merging map[string]bool) (mergepolicy.MergeSpecification, error) {
	var m mergepolicy.OneMerge
	for _, s := range segs {
		if !merging[s.Name] {
			m.Segments = append(m.Segments, s.Name)
			m.EstimatedBytes += s.SizeBytes
		}
	}
	if len(m.Segments) < 2 {
		return mergepolicy.MergeSpecification{}, nil
	}
	return mergepolicy.MergeSpecification{Merges: []mergepolicy.OneMerge{m}}, nil
}

// heldMerges keeps the merges submitted to it until the test runs them.
type heldMerges struct {
	mu     sync.Mutex
	merges []mergescheduler.Merge
}

func (h *heldMerges) Submit(m mergescheduler.Merge) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.merges = append(h.merges, m)
	return nil
}

func (h *heldMerges) MaybeStall(context.Context) error { return nil }

// runOne runs the one merge submitted.
func (h *heldMerges) runOne(t *testing.T) error {
	t.Helper()
	h.mu.Lock()
	merges := h.merges
	h.merges = nil
	h.mu.Unlock()
	if len(merges) != 1 {
		t.Fatalf("%d merges submitted, want 1", len(merges))
	}
	return merges[0].Run(context.Background(), mergescheduler.NewRateLimiter(0))
}

// TestMergeRefusesDamagedInput: a merge checksums its inputs before it
// writes anything, so a damaged input fails the merge and the engine,
// naming the file, and no merged segment is written or published; the
// undamaged control merges.
func TestMergeRefusesDamagedInput(t *testing.T) {
	for _, damage := range []string{"", ".doc", ".nvd", ".fdt"} {
		t.Run("damage="+damage, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			sched := &heldMerges{}
			e, err := openScrubEngine(t, dir, Options{MergePolicy: mergeAll{}, MergeScheduler: sched})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close(ctx)
			r := rand.New(rand.NewPCG(11, 12))
			fillScrubEngine(t, e, r, 0, 300, 200)
			fillScrubEngine(t, e, r, 1000, 300, 200) // a second segment: the merge is submitted
			before := e.indexFiles()
			var name string
			if damage != "" {
				name = bitflip.Largest(t, dir, damage)
			}
			err = sched.runOne(t)
			if damage == "" {
				if err != nil {
					t.Fatalf("merge of clean inputs: %v", err)
				}
				if _, err := e.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
				if st := e.Stats(); st.Merges != 1 || st.Segments != 1 {
					t.Fatalf("clean merge: %d merges, %d segments", st.Merges, st.Segments)
				}
				return
			}
			if !errors.Is(err, index.ErrCorrupt) || !strings.Contains(err.Error(), name) {
				t.Fatalf("merge with damaged %s: %v", name, err)
			}
			if ferr := e.Failure(); !strings.Contains(ferr.Error(), name) || !strings.Contains(ferr.Error(), "(merge)") {
				t.Fatalf("engine failure: %v", ferr)
			}
			if st := e.Stats(); st.Merges != 0 || st.MergesFailed != 1 || st.CorruptFiles != 1 {
				t.Fatalf("stats: %d merges, %d failed, %d corrupt", st.Merges, st.MergesFailed, st.CorruptFiles)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, de := range ents {
				if n := de.Name(); isIndexFile(n) && !slices.Contains(before, n) {
					t.Errorf("merge left %s", n)
				}
			}
			rd := e.Acquire()
			segs := len(rd.Leaves())
			rd.Release()
			if segs != 2 {
				t.Errorf("%d segments published, want the 2 inputs", segs)
			}
			e.Close(ctx)
			if _, err := openScrubEngine(t, dir, Options{}); !errors.Is(err, ErrMarkedCorrupted) || !strings.Contains(err.Error(), name) {
				t.Fatalf("reopen: %v", err)
			}
		})
	}
}
