package engine

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-search/sluice/node/engine/translog"
)

// replayHistory writes a translog as a sequence of primaries would leave
// it on a copy: each term's primary starts numbering a little below where
// the log ends (the old primary's unacknowledged tail is reassigned),
// records land slightly out of order, old primaries' stragglers arrive
// after the new term began, some records arrive twice, a new term usually
// (not always) writes a trim record above its start, and some gaps are
// filled with no-ops. Within a term a seqNo names one operation.
func replayHistory(rng *rand.Rand, from int64) []translog.Op {
	var log []translog.Op
	var pending []translog.Op // appended out of order: flushed in a random order
	flush := func(all bool) {
		for len(pending) > 0 && (all || rng.IntN(3) == 0) {
			i := rng.IntN(len(pending))
			log = append(log, pending[i])
			pending = slices.Delete(pending, i, i+1)
		}
	}
	next := from + 1
	terms := 1 + rng.IntN(4)
	var stragglers []translog.Op
	for term := uint64(1); term <= uint64(terms); term++ {
		if term > 1 {
			// The new primary had up to some seqNo below the log's end.
			start := max(from+1, next-int64(rng.IntN(6)))
			if rng.IntN(4) != 0 {
				log = append(log, translog.Op{Type: translog.OpTrim, PrimaryTerm: term, SeqNo: uint64(start - 1)})
			}
			next = start
		}
		n := 5 + rng.IntN(25)
		for range n {
			op := translog.Op{SeqNo: uint64(next), PrimaryTerm: term, ID: fmt.Appendf(nil, "id%d", rng.IntN(8))}
			switch r := rng.IntN(10); {
			case r < 6:
				op.Type, op.Source = translog.OpIndex, fmt.Appendf(nil, `{"title":"s%d t%d"}`, next, term)
			case r < 9:
				op.Type = translog.OpDelete
			default:
				op.Type, op.ID, op.Source = translog.OpNoOp, nil, []byte("gap")
			}
			next++
			if rng.IntN(12) == 0 {
				continue // never logged: a gap
			}
			if rng.IntN(8) == 0 {
				stragglers = append(stragglers, op) // arrives during a later term
				continue
			}
			pending = append(pending, op)
			if rng.IntN(10) == 0 && len(log) > 0 {
				dup := log[rng.IntN(len(log))]
				if dup.Type != translog.OpTrim {
					pending = append(pending, dup)
				}
			}
			flush(false)
		}
		flush(true)
		if term > 1 {
			for len(stragglers) > 0 && rng.IntN(2) == 0 {
				log = append(log, stragglers[0])
				stragglers = stragglers[1:]
			}
		}
	}
	return append(log, stragglers...)
}

// replayModel is what replaying log above from must leave, given the docs
// committed before: trim records void older terms' earlier records above
// their bound; per seqNo the highest term wins; per id the highest seqNo.
func replayModel(log []translog.Op, from int64, committed map[string]string) (map[string]string, int64) {
	var live []translog.Op
	for i, op := range log {
		if op.Type == translog.OpTrim || int64(op.SeqNo) <= from {
			continue
		}
		void := false
		for _, tr := range log[i+1:] {
			if tr.Type == translog.OpTrim && op.PrimaryTerm < tr.PrimaryTerm && op.SeqNo > tr.SeqNo {
				void = true
			}
		}
		if !void {
			live = append(live, op)
		}
	}
	top := map[uint64]uint64{}
	maxSeq := from
	for _, op := range live {
		top[op.SeqNo] = max(top[op.SeqNo], op.PrimaryTerm)
		maxSeq = max(maxSeq, int64(op.SeqNo))
	}
	win := map[string]translog.Op{}
	for _, op := range live {
		if op.Type == translog.OpNoOp || op.PrimaryTerm != top[op.SeqNo] {
			continue
		}
		if w, ok := win[string(op.ID)]; !ok || op.SeqNo > w.SeqNo {
			win[string(op.ID)] = op
		}
	}
	docs := maps.Clone(committed)
	for id, op := range win {
		if op.Type == translog.OpDelete {
			delete(docs, id)
		} else {
			docs[id] = string(op.Source)
		}
	}
	return docs, maxSeq
}

// TestReplayTermsModel: random multi-term translogs replay to what the
// model says — trim records, per-seqNo highest term, per-id highest seqNo
// — numbering continues after the highest seqNo, every gap up to it is
// filled with a no-op of the engine's term, and a second reopen (with the
// no-ops in the log) changes nothing.
func TestReplayTermsModel(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 99))
		dir := t.TempDir()
		e := mustOpenDurable(t, dir, Options{})
		committed := map[string]string{}
		for i := range rng.IntN(6) {
			id, src := fmt.Sprintf("id%d", i), fmt.Sprintf(`{"title":"committed %d"}`, i)
			if _, err := e.Index(ctx, []byte(id), []byte(src)); err != nil {
				t.Fatal(err)
			}
			committed[id] = src
		}
		si, err := e.Commit(ctx, CommitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		from := si.SeqNo
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
		log := replayHistory(rng, from)
		tl, err := translog.Open(ctx, filepath.Join(dir, "translog"), translog.Options{GenerationSize: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		for i := range log {
			if log[i].Type == translog.OpTrim {
				err = tl.Trim(ctx, log[i].PrimaryTerm, log[i].SeqNo)
			} else {
				_, err = tl.Add(ctx, &log[i])
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		maxTerm := int64(tl.Stats().MaxTerm)
		tl.Close()

		want, maxSeq := replayModel(log, from, committed)
		for round := range 2 {
			e = mustOpenDurable(t, dir, Options{})
			if got := liveDocs(t, e); !maps.Equal(got, want) {
				t.Fatalf("seed %d round %d: replay\n got %v\nwant %v\nlog %v", seed, round, got, want, log)
			}
			if e.PrimaryTerm() != max(maxTerm, 1) {
				t.Fatalf("seed %d: term %d, want %d", seed, e.PrimaryTerm(), maxTerm)
			}
			res, err := e.Index(ctx, []byte("next"), []byte(`{}`))
			if err != nil || res.SeqNo != maxSeq+1 {
				t.Fatalf("seed %d: next seq %d (%v), want %d", seed, res.SeqNo, err, maxSeq+1)
			}
			if _, err := e.Delete(ctx, []byte("next")); err != nil {
				t.Fatal(err)
			}
			maxSeq += 2
			checkNoGaps(t, e, from, maxSeq)
			if err := e.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkNoGaps: every seqNo in (from, to] has a record in e's translog.
func checkNoGaps(t *testing.T, e *Engine, from, to int64) {
	t.Helper()
	seen := map[int64]bool{}
	for _, op := range translogOps(t, e, uint64(from)+1) {
		seen[int64(op.SeqNo)] = true
	}
	for s := from + 1; s <= to; s++ {
		if !seen[s] {
			t.Fatalf("seqNo %d has no record (gaps up to %d should be filled)", s, to)
		}
	}
}
