package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/shard"
)

// TestPinnedReaderSurvivesPromotion: a point-in-time reader pinned on a
// replica copy (a PIT, a scroll) keeps answering after the copy is
// promoted to primary — the same view, documents written since unseen —
// instead of ending with the role change; it ends when unpinned, and new
// readers see the new primary's writes.
func TestPinnedReaderSurvivesPromotion(t *testing.T) {
	rc := newReplicated(t, 2, 1)
	p, r, term := rc.copies(t)
	mustBulk(t, rc.shard(t, p), bulkOps(0, 100), shard.RefreshWaitFor)
	pr, err := rc.shard(t, r).PinReader(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	id := pr.ID()
	pr.Done()
	// Small refreshed bulks: the primary merges the pinned segments away,
	// and the promoted engine deletes their files, which the pinned
	// reader still has mapped.
	dir := filepath.Join(rc.dirs[r], rc.uuid, "0")
	before := segmentFiles(t, dir)
	for i := range 30 {
		mustBulk(t, rc.shard(t, p), bulkOps(100+i*5, 105+i*5), shard.RefreshWaitFor)
	}

	rc.nodes[p].Stop()
	s := rc.waitPrimary(t, r, term)
	mustBulk(t, s, bulkOps(250, 260), shard.RefreshWaitFor)

	got, err := s.Reader(id, time.Minute)
	if err != nil {
		t.Fatalf("reader pinned on the replica, after its promotion: %v", err)
	}
	if n := got.Reader().NumDocs(); n != 100 {
		t.Fatalf("pinned reader shows %d docs after the promotion, want the 100 it was pinned with", n)
	}
	gone := 0
	for name := range before {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			gone++
		}
	}
	if gone == 0 {
		t.Fatalf("no file of the pinned reader was deleted (%d files): the test does not cover merged-away segments", len(before))
	}
	for doc := range got.Reader().MaxDoc() {
		if sd, err := got.Document(doc); err != nil || len(sd.Source) == 0 {
			t.Fatalf("stored document %d through the pinned reader, %d of its files deleted: %v", doc, gone, err)
		}
	}
	got.Done()
	got.Unpin()
	if _, err := s.Reader(id, time.Minute); err == nil {
		t.Fatal("reader still there after Unpin")
	}
	rd := s.Acquire()
	defer rd.Release()
	if rd.NumDocs() != 260 {
		t.Fatalf("new primary's reader shows %d docs, want 260", rd.NumDocs())
	}
}

// segmentFiles lists the index files in dir.
func segmentFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, de := range ents {
		if strings.HasPrefix(de.Name(), "_") {
			out[de.Name()] = true
		}
	}
	return out
}
