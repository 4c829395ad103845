package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-search/sluice/node/engine/mergepolicy"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// replGroup is a replication group wired by plain calls, as the node will
// wire it by RPCs: a primary engine and replicas; operations replicated
// after each primary bulk (acknowledged once every in-sync replica has
// them durably); a checkpoint installed after each refresh; peer recovery
// for a replica that returns; promotion with a resync.
type replGroup struct {
	t    *testing.T
	rng  *rand.Rand
	term int64

	mu       sync.Mutex // the merge pre-copy hook reads primary and copies concurrently
	primary  *Engine
	pdir     string
	copies   []*replCopy
	sent     int64 // the primary's ops up to here went to every in-sync copy
	acked    map[string]string
	maybe    map[string][]string // ids an unacknowledged op touched: states they may have
	files    map[string]uint32   // every checkpoint file ever published: name -> checksum
	promoted int
}

type replCopy struct {
	dir    string
	r      *Replica
	inSync bool
}

const deleted = "<deleted>"

func (g *replGroup) options(dir string, term int64) Options {
	p, err := mergepolicy.NewTieredMergePolicy(mergepolicy.Options{SegmentsPerTier: 2, FloorSegmentBytes: 1 << 10})
	if err != nil {
		g.t.Fatal(err)
	}
	return durableOptions(g.t, dir, Options{PrimaryTerm: term, MergePolicy: p,
		MergedSegmentPreCopy: g.preCopy, MergePreCopyTimeout: 5e9})
}

// preCopy is the primary's merge hook: every live in-sync copy fetches
// the merged files.
func (g *replGroup) preCopy(ctx context.Context, files []FileMeta) error {
	g.mu.Lock()
	p := g.primary
	var rs []*Replica
	for _, c := range g.copies {
		if c.r != nil {
			rs = append(rs, c.r)
		}
	}
	g.mu.Unlock()
	if p == nil {
		return errors.New("no primary yet")
	}
	var errs []error
	for _, r := range rs {
		if _, _, err := r.PreCopy(ctx, files, fetchFrom(p, nil)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func newReplGroup(t *testing.T, seed uint64, replicas int) *replGroup {
	g := &replGroup{t: t, rng: rand.New(rand.NewPCG(seed, 16)), term: 1, acked: map[string]string{},
		maybe: map[string][]string{}, files: map[string]uint32{}}
	g.pdir = t.TempDir()
	p, err := Open(context.Background(), g.options(g.pdir, 1))
	if err != nil {
		t.Fatal(err)
	}
	g.setPrimary(p)
	for range replicas {
		g.addCopy(t.TempDir())
	}
	return g
}

func (g *replGroup) setPrimary(p *Engine) {
	g.mu.Lock()
	g.primary = p
	g.mu.Unlock()
}

// addCopy opens a replica at dir and recovers it from the primary.
func (g *replGroup) addCopy(dir string) {
	c := &replCopy{dir: dir}
	g.mu.Lock()
	g.copies = append(g.copies, c)
	g.mu.Unlock()
	g.recover(c)
}

// recover brings a copy (new, or back after a crash) into the group:
// Recover with the primary's checkpoint, taken with a translog retention
// lock held, then stream every operation above the checkpoint.
func (g *replGroup) recover(c *replCopy) {
	ctx := context.Background()
	r, err := OpenReplica(ctx, g.options(c.dir, 0))
	if err != nil {
		g.t.Fatalf("open replica %s: %v", c.dir, err)
	}
	cp := refreshCheckpoint(g.t, g.primary)
	defer cp.Release()
	g.checkFiles(cp)
	release, err := g.primary.RetainTranslogFrom(cp.SeqNo + 1)
	if err != nil {
		g.t.Fatal(err)
	}
	defer release()
	if _, err := r.Recover(ctx, g.wire(cp), fetchFrom(g.primary, nil)); err != nil {
		g.t.Fatalf("recovery: %v", err)
	}
	g.stream(r, cp.SeqNo)
	g.mu.Lock()
	c.r, c.inSync = r, true
	g.mu.Unlock()
	g.updateGCP()
}

// stream sends the primary's operations above seq to r.
func (g *replGroup) stream(r *Replica, above int64) {
	if _, err := r.ApplyOps(context.Background(), g.term, g.opsAbove(above)); err != nil {
		g.t.Fatalf("stream ops above %d: %v", above, err)
	}
}

// opsAbove reads the primary's operations above seq, as the node streams
// them.
func (g *replGroup) opsAbove(above int64) []translog.Op {
	snap, err := g.primary.TranslogSnapshot(context.Background(), above)
	if err != nil {
		g.t.Fatal(err)
	}
	return snapshotOps(g.t, snap)
}

func (g *replGroup) wire(cp *ReplicationCheckpoint) *ReplicationCheckpoint {
	w, err := DecodeCheckpoint(mustMarshal(g.t, cp))
	if err != nil {
		g.t.Fatal(err)
	}
	return w
}

// checkFiles: no file name is ever published with two checksums, by any
// primary of any term.
func (g *replGroup) checkFiles(cp *ReplicationCheckpoint) {
	for _, f := range cp.Files {
		if sum, ok := g.files[f.Name]; ok && sum != f.Checksum {
			g.t.Fatalf("file %s published with checksum %#x and, by term %d, %#x", f.Name, sum, cp.Term, f.Checksum)
		}
		g.files[f.Name] = f.Checksum
	}
}

func (g *replGroup) inSync() []*replCopy {
	var out []*replCopy
	for _, c := range g.copies {
		if c.inSync && c.r != nil {
			out = append(out, c)
		}
	}
	return out
}

// updateGCP tells the copies the global checkpoint: the lowest local
// checkpoint of the in-sync copies (the primary holds everything sent).
func (g *replGroup) updateGCP() {
	gcp := g.sent
	for _, c := range g.inSync() {
		gcp = min(gcp, c.r.State().LocalCheckpoint)
	}
	for _, c := range g.inSync() {
		c.r.UpdateGlobalCheckpoint(gcp)
	}
}

// bulk applies random operations on the primary and replicates them to
// the in-sync copies (to: all of them; otherwise only those in to, and
// nothing is acknowledged).
func (g *replGroup) bulk(to []*replCopy) {
	ctx := context.Background()
	b := g.primary.NewBulk()
	type applied struct{ id, state string }
	var done []applied
	for range 1 + g.rng.IntN(8) {
		id := "id" + strconv.Itoa(g.rng.IntN(25))
		if g.rng.IntN(4) == 0 {
			if _, err := b.Delete(ctx, []byte(id)); err != nil {
				g.t.Fatal(err)
			}
			done = append(done, applied{id, deleted})
			continue
		}
		src := fmt.Sprintf(`{"title":"%s t%d r%d"}`, []string{"one", "two", "x"}[g.rng.IntN(3)], g.term, g.rng.IntN(1000))
		if _, err := b.Index(ctx, []byte(id), []byte(src)); err != nil {
			g.t.Fatal(err)
		}
		done = append(done, applied{id, src})
	}
	if err := b.Sync(ctx); err != nil {
		g.t.Fatal(err)
	}
	ops := g.opsAbove(g.sent)
	all := to == nil
	if all {
		to = g.inSync()
	}
	for _, c := range to {
		if _, err := c.r.ApplyOps(ctx, g.term, ops); err != nil {
			g.t.Fatalf("replicate: %v", err)
		}
	}
	if !all {
		for _, d := range done {
			g.maybe[d.id] = append(g.maybe[d.id], d.state)
		}
		return
	}
	for _, op := range ops {
		g.sent = max(g.sent, int64(op.SeqNo))
	}
	for _, d := range done {
		g.acked[d.id] = d.state
	}
	g.updateGCP()
}

// refresh publishes a checkpoint to every in-sync copy and checks that
// each then shows what the primary shows.
func (g *replGroup) refresh() {
	ctx := context.Background()
	cp := refreshCheckpoint(g.t, g.primary)
	defer cp.Release()
	g.checkFiles(cp)
	for _, c := range g.inSync() {
		if _, err := c.r.InstallCheckpoint(ctx, g.wire(cp), fetchFrom(g.primary, nil)); err != nil {
			g.t.Fatalf("install: %v", err)
		}
	}
	// Refreshes are the test's only: the primary's reader is cp's.
	for _, c := range g.inSync() {
		sameView(g.t, g.primary, c.r)
	}
}

// checkPrimary: the primary holds every acknowledged operation; an id an
// unacknowledged op touched may hold that op's state instead. The
// primary's state then becomes the truth.
func (g *replGroup) checkPrimary(what string) {
	docs := liveDocs(g.t, g.primary)
	ids := map[string]bool{}
	for id := range g.acked {
		ids[id] = true
	}
	for id := range g.maybe {
		ids[id] = true
	}
	for id := range docs {
		ids[id] = true
	}
	for id := range ids {
		got, ok := docs[id]
		if !ok {
			got = deleted
		}
		want, acked := g.acked[id]
		if !acked {
			want = deleted
		}
		if got == want {
			continue
		}
		okMaybe := false
		for _, m := range g.maybe[id] {
			okMaybe = okMaybe || m == got
		}
		if !okMaybe {
			for _, op := range translogOps(g.t, g.primary, 0) {
				if string(op.ID) == id {
					g.t.Logf("log: %v seq %d term %d %s", op.Type, op.SeqNo, op.PrimaryTerm, op.Source)
				}
			}
			g.t.Logf("commit %+v", g.primary.w.LastCommit().UserData)
			g.t.Fatalf("%s: id %s is %q; acknowledged %q (unacknowledged: %q)", what, id, got, want, g.maybe[id])
		}
		g.acked[id] = got
	}
	for id, s := range g.acked {
		if s == deleted {
			delete(g.acked, id)
		}
	}
	clear(g.maybe)
}

// promote: the primary dies (maybe after sending a last bulk to some
// copies only), an in-sync copy becomes primary of the next term, and
// the others are resynced: a trim record above the new primary's history,
// then its operations above the global checkpoint.
func (g *replGroup) promote() {
	ctx := context.Background()
	sync := g.inSync()
	if len(sync) == 0 {
		return
	}
	if g.rng.IntN(2) == 0 {
		var some []*replCopy
		for _, c := range sync {
			if g.rng.IntN(2) == 0 {
				some = append(some, c)
			}
		}
		g.bulk(some)
		// The old primary may even have published a checkpoint showing
		// the unacknowledged operations, which some copies committed.
		if g.rng.IntN(2) == 0 {
			cp := refreshCheckpoint(g.t, g.primary)
			g.checkFiles(cp)
			for _, c := range some {
				if _, err := c.r.InstallCheckpoint(ctx, g.wire(cp), fetchFrom(g.primary, nil)); err != nil {
					g.t.Fatal(err)
				}
				if _, err := c.r.Commit(ctx); err != nil {
					g.t.Fatal(err)
				}
			}
			cp.Release()
		}
	}
	old := g.primary
	g.setPrimary(nil)
	if err := old.Close(ctx); err != nil {
		g.t.Fatal(err)
	}
	// Of the old primary's own files nothing is reused: its copy is gone.
	os.RemoveAll(g.pdir)
	gcp := sync[0].r.State().GlobalCheckpoint
	chosen := sync[g.rng.IntN(len(sync))]
	if os.Getenv("SLUICE_REPLICATION_TRACE") != "" {
		lc := chosen.r.LastCommit()
		var lseq int64
		if lc != nil {
			lseq = lc.SeqNo
		}
		g.t.Logf("promote %s: state %+v last commit %d translog %+v", chosen.dir, chosen.r.State(), lseq, chosen.r.TranslogStats())
	}
	g.term++
	p, err := chosen.r.Promote(ctx, g.term)
	if err != nil {
		g.t.Fatalf("promote to term %d: %v", g.term, err)
	}
	g.promoted++
	g.mu.Lock()
	g.primary, g.pdir = p, chosen.dir
	for i, c := range g.copies {
		if c == chosen {
			g.copies = append(g.copies[:i:i], g.copies[i+1:]...)
			break
		}
	}
	g.mu.Unlock()
	g.checkPrimary(fmt.Sprintf("after promotion to term %d", g.term))
	maxSeq := p.Stats().SeqNo
	release, err := p.RetainTranslogFrom(max(gcp, 0) + 1)
	if err != nil {
		g.t.Fatal(err)
	}
	for _, c := range g.inSync() {
		// The routing watch tells the copy the new term; the resync
		// voids what the old primary sent beyond the new one's history.
		if err := c.r.SetPrimaryTerm(g.term); err != nil {
			g.t.Fatal(err)
		}
		if err := c.r.Trim(ctx, g.term, maxSeq); err != nil {
			g.t.Fatal(err)
		}
		g.stream(c.r, max(gcp, 0))
	}
	release()
	g.sent = maxSeq
	// Fencing: the old primary's operations are refused now.
	for _, c := range g.inSync() {
		stale := translog.Op{Type: translog.OpIndex, SeqNo: uint64(maxSeq + 1), PrimaryTerm: uint64(g.term - 1),
			ID: []byte("stale"), Source: []byte(`{}`)}
		if _, err := c.r.ApplyOps(ctx, g.term-1, []translog.Op{stale}); !errors.Is(err, ErrStaleTerm) {
			g.t.Fatalf("old primary's op after the resync: %v", err)
		}
	}
	g.updateGCP()
	if len(g.copies) < 2 {
		g.addCopy(g.t.TempDir())
	}
	g.refresh()
}

// crashCopy closes a copy (what it acknowledged is in its translog) and
// later brings it back through recovery.
func (g *replGroup) crashCopy() {
	if len(g.copies) == 0 {
		return
	}
	c := g.copies[g.rng.IntN(len(g.copies))]
	if c.r == nil {
		g.recover(c)
		return
	}
	g.mu.Lock()
	r := c.r
	c.r, c.inSync = nil, false
	g.mu.Unlock()
	if err := r.Close(context.Background()); err != nil {
		g.t.Fatal(err)
	}
	g.updateGCP()
}

func (g *replGroup) close() {
	ctx := context.Background()
	for _, c := range g.copies {
		if c.r != nil {
			c.r.Close(ctx)
		}
	}
	if g.primary != nil {
		g.primary.Close(ctx)
	}
}

// TestReplicationModel: a primary and two replicas under random bulks,
// refreshes, commits, merges (pre-copied), replica crashes and recoveries,
// and promotions (some right after a bulk that reached only some copies).
// After every refresh each replica shows exactly what the primary shows;
// after every promotion the new primary holds every acknowledged
// operation; no file name is ever published with two checksums; the old
// primary's operations are refused after a resync.
func TestReplicationModel(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	if v, err := strconv.Atoi(os.Getenv("SLUICE_REPLICATION_SEEDS")); err == nil {
		seeds = v
	}
	var promotions atomic.Int64
	for seed := range uint64(seeds) {
		g := newReplGroup(t, seed, 2)
		for step := range 120 {
			if os.Getenv("SLUICE_REPLICATION_TRACE") != "" {
				t.Logf("seed %d step %d: sent %d term %d", seed, step, g.sent, g.term)
			}
			switch r := g.rng.IntN(100); {
			case r < 55:
				g.bulk(nil)
			case r < 75:
				g.refresh()
			case r < 82:
				if _, err := g.primary.Commit(context.Background(), CommitOptions{}); err != nil {
					t.Fatal(err)
				}
			case r < 88:
				for _, c := range g.inSync() {
					if _, err := c.r.Commit(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			case r < 94:
				g.crashCopy()
			default:
				g.promote()
			}
		}
		g.promote()
		promotions.Add(int64(g.promoted))
		g.close()
	}
	t.Logf("%d seeds, %d promotions", seeds, promotions.Load())
}
