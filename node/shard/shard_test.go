package shard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// clusterMapping is an in-process MappingUpdater with the cluster's merge
// semantics: one index mapping, updates merged under a lock.
type clusterMapping struct {
	mu    sync.Mutex
	m     *mapping.Mapping
	calls int
}

func (c *clusterMapping) UpdateMapping(_ context.Context, _, _ string, update *mapping.Mapping) (*mapping.Mapping, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	merged, err := c.m.Merge(update)
	if err != nil {
		return nil, err
	}
	c.m = merged
	return merged, nil
}

func newHost(t *testing.T, up MappingUpdater) *Host {
	t.Helper()
	h, err := NewHost(HostOptions{DataDir: t.TempDir(), Updater: up})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.CloseAll(context.Background()) })
	return h
}

func mustMapping(t *testing.T, fields map[string]mapping.Field) *mapping.Mapping {
	t.Helper()
	m, err := mapping.New(mapping.DynamicDefault, fields)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpenCloseRecoversCommittedDocs(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	meta := Meta{ID: ID{IndexUUID: "u1", Shard: 2}, Index: "books"}
	s, err := h.Open(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := s.IndexDoc(ctx, fmt.Appendf(nil, "%d", i), fmt.Appendf(nil, `{"n":%d}`, i), false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteDoc(ctx, []byte("3")); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx, meta.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Get(meta.ID); !errors.Is(err, ErrNotHere) {
		t.Fatalf("Get after Close: %v, want ErrNotHere", err)
	}
	s, err = h.Open(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().NumDocs; n != 19 {
		t.Fatalf("reopened shard has %d docs, want 19", n)
	}
	// Close committed: the restart replays nothing.
	if p := s.Recovery(); p.Replayed != 0 {
		t.Fatalf("reopen after a clean close replayed %d operations", p.Replayed)
	}
	if err := h.Delete(ctx, meta.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.Path(meta.ID)); !os.IsNotExist(err) {
		t.Fatalf("shard dir still there after Delete: %v", err)
	}
}

func TestDynamicMappingGoesThroughCluster(t *testing.T) {
	ctx := context.Background()
	cluster := &clusterMapping{m: mustMapping(t, map[string]mapping.Field{"title": mapping.NewField(document.Text)})}
	h := newHost(t, cluster)
	s, err := h.Open(ctx, Meta{ID: ID{IndexUUID: "u", Shard: 0}, Index: "i", Mapping: cluster.m})
	if err != nil {
		t.Fatal(err)
	}
	// A burst of docs introducing one field publishes it once.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			_, err := s.IndexDoc(ctx, fmt.Appendf(nil, "d%d", i), fmt.Appendf(nil, `{"title":"x","year":%d}`, 1900+i), false)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if cluster.calls != 1 {
		t.Errorf("mapping updates sent: %d, want 1", cluster.calls)
	}
	if f, ok := s.Mapping().Field("year"); !ok || f.Type != document.Long {
		t.Fatalf("shard mapping year = %+v, %v; want long", f, ok)
	}

	// Another shard got "color" mapped as long first: ours loses.
	cluster.m, _ = cluster.m.Merge(mustMapping(t, map[string]mapping.Field{"color": mapping.NewField(document.Long)}))
	_, err = s.IndexDoc(ctx, []byte("c"), []byte(`{"color":"red"}`), false)
	if !errors.Is(err, mapping.ErrConflict) {
		t.Fatalf("racing field type: err %v, want mapping conflict", err)
	}
	// A known field with a value of the wrong type is the document's fault.
	_, err = s.IndexDoc(ctx, []byte("y"), []byte(`{"year":"nineteen"}`), false)
	var fe *mapping.FieldError
	if !errors.As(err, &fe) || fe.Field != "year" {
		t.Fatalf("bad value: err %v, want a FieldError naming year", err)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().NumDocs; n != 32 {
		t.Fatalf("docs = %d, want 32 (rejected docs must not be indexed)", n)
	}
}

func TestCreateOnly(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	s, err := h.Open(ctx, Meta{ID: ID{IndexUUID: "u", Shard: 0}, Index: "i"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, conflicts := 0, 0
	for range 8 {
		wg.Go(func() {
			_, err := s.IndexDoc(ctx, []byte("same"), []byte(`{"a":1}`), true)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, ErrConflict):
				conflicts++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if created != 1 || conflicts != 7 {
		t.Fatalf("created %d, conflicts %d; want 1 and 7", created, conflicts)
	}
}

// TestBatchRefusesEmptyID: every write path of a batch — bulk items and
// a reindex's ingest, which calls Index and Delete directly — refuses an
// operation without an id, and the batch goes on with the next one.
func TestBatchRefusesEmptyID(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	s, err := h.Open(ctx, Meta{ID: ID{IndexUUID: "u", Shard: 0}, Index: "i"})
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	if _, err := b.Index(ctx, nil, nil, []byte(`{"a":1}`), false); !errors.Is(err, ErrInvalid) {
		t.Errorf("Index with no id: %v, want ErrInvalid", err)
	}
	if _, err := b.Delete(ctx, []byte{}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Delete with no id: %v, want ErrInvalid", err)
	}
	if _, err := b.Index(ctx, []byte("ok"), nil, []byte(`{"a":1}`), false); err != nil {
		t.Fatalf("the next operation: %v", err)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesDamagedTranslog: a shard whose last acknowledged
// operation is damaged on disk does not open; the error — which the node
// reports as the FAILED shard's reason — wraps translog.ErrCorrupt and
// names the file and offset.
func TestOpenRefusesDamagedTranslog(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	meta := Meta{ID: ID{IndexUUID: "u-bad", Shard: 0}, Index: "books"}
	s, err := h.Open(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.IndexDoc(ctx, fmt.Appendf(nil, "%d", i), []byte(`{"n":1}`), false); err != nil {
			t.Fatal(err)
		}
	}
	// A crash now, then the last acknowledged record's last byte flips.
	dir := filepath.Join(h.Path(meta.ID), "translog")
	ckp, err := translog.ReadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := os.CopyFS(filepath.Join(data, "u-bad", "0"), os.DirFS(h.Path(meta.ID))); err != nil {
		t.Fatal(err)
	}
	tlog := filepath.Join(data, "u-bad", "0", "translog", fmt.Sprintf("translog-%d.tlog", ckp.Generation))
	b, err := os.ReadFile(tlog)
	if err != nil {
		t.Fatal(err)
	}
	b[ckp.Offset-1] ^= 1
	if err := os.WriteFile(tlog, b, 0o644); err != nil {
		t.Fatal(err)
	}
	h2, err := NewHost(HostOptions{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h2.Open(ctx, meta)
	if !errors.Is(err, translog.ErrCorrupt) || !strings.Contains(err.Error(), tlog) || !strings.Contains(err.Error(), "at offset") {
		t.Fatalf("got %v, want translog.ErrCorrupt naming %s and the offset", err, tlog)
	}
	t.Log(err)
}

// TestPauseRefresh: while a copy pauses refresh, neither the index's
// interval nor a change of it makes writes visible; the last resume
// restores the index's (latest) interval.
func TestPauseRefresh(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	s, err := h.Open(ctx, Meta{ID: ID{IndexUUID: "u", Shard: 0}, Index: "i", RefreshInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resume1, resume2 := s.PauseRefresh(), s.PauseRefresh()
	h.SetRefreshInterval("u", 10*time.Millisecond)
	if _, err := s.IndexDoc(ctx, []byte("a"), []byte(`{"n":1}`), false); err != nil {
		t.Fatal(err)
	}
	resume1()
	time.Sleep(200 * time.Millisecond)
	if n := s.Stats().NumDocs; n != 0 {
		t.Fatalf("refreshed while paused: %d docs visible", n)
	}
	resume2()
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().NumDocs != 1 {
		if time.Now().After(deadline) {
			t.Fatal("refresh did not resume")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPinnedReadersGoWithTheirShard: closing a shard releases the readers
// pinned on it; the cap counts every shard's readers.
func TestPinnedReadersGoWithTheirShard(t *testing.T) {
	ctx := context.Background()
	h, err := NewHost(HostOptions{DataDir: t.TempDir(), MaxOpenReaders: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.CloseAll(ctx) })
	a, _ := h.Open(ctx, Meta{ID: ID{IndexUUID: "u", Shard: 0}, Index: "i"})
	b, _ := h.Open(ctx, Meta{ID: ID{IndexUUID: "u", Shard: 1}, Index: "i"})
	ra, err := a.PinReader(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ra.Done()
	rb, err := b.PinReader(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rb.Done()
	if _, err := a.PinReader(time.Minute); !errors.Is(err, ErrTooManyReaders) {
		t.Fatalf("third reader: %v, want ErrTooManyReaders", err)
	}
	if _, err := b.Reader(ra.ID(), 0); !errors.Is(err, ErrReaderGone) {
		t.Fatalf("a's reader through b: %v, want ErrReaderGone", err)
	}
	if err := h.Close(ctx, a.ID()); err != nil {
		t.Fatal(err)
	}
	if n := h.PinnedReaders(); n != 1 {
		t.Fatalf("%d readers pinned after closing a shard, want 1", n)
	}
	if !h.Unpin(rb.ID()) || h.PinnedReaders() != 0 {
		t.Fatalf("unpin: %d readers left", h.PinnedReaders())
	}
}

// TestClosedReplicaRefusesReads: a replica copy's Shard that closed — as
// Host.Promote closes it while the promoted engine opens, keeping it
// registered for its pinned readers — refuses new readers and gets with
// ErrNotHere (the coordinator tries another copy) instead of answering
// from the empty reader a closed replica shows.
func TestClosedReplicaRefusesReads(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	meta := Meta{ID: ID{IndexUUID: "u1", Shard: 0}, Index: "books"}
	r, err := h.OpenReplica(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := r.PinReader(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pr.Done()
	if err := h.Close(ctx, meta.ID); err != nil {
		t.Fatal(err)
	}
	if pr, err := r.PinReader(time.Minute); !errors.Is(err, ErrNotHere) {
		if pr != nil {
			pr.Done()
		}
		t.Fatalf("reader of a closed replica: %v, want ErrNotHere", err)
	}
	if _, _, err := r.Get(ctx, []byte("1"), false); !errors.Is(err, ErrNotHere) {
		t.Fatalf("get on a closed replica: %v, want ErrNotHere", err)
	}
}

// TestPinnedReaderInUseDuringPromotion: a search holding a reader pinned
// on a replica (touching it, ending its use) while the copy is promoted
// reaches the node's registry without racing the promotion, which moves
// the reader to the primary's Shard; unpinned after, it is gone (run with
// -race).
func TestPinnedReaderInUseDuringPromotion(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	meta := Meta{ID: ID{IndexUUID: "u1", Shard: 0}, Index: "books"}
	r, err := h.OpenReplica(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := r.PinReader(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			pr.Touch(time.Minute)
		}
	})
	p, err := h.Promote(ctx, meta.ID, 2, nil)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	pr.Done()
	pr.Unpin()
	if _, err := p.Reader(pr.ID(), time.Minute); !errors.Is(err, ErrReaderGone) {
		t.Fatalf("reader after Unpin: %v, want ErrReaderGone", err)
	}
}

// hookMapping is clusterMapping that runs hook once, inside the first
// update, before taking it.
type hookMapping struct {
	clusterMapping
	once sync.Once
	hook func()
}

func (h *hookMapping) UpdateMapping(ctx context.Context, index, uuid string, update *mapping.Mapping) (*mapping.Mapping, error) {
	h.once.Do(h.hook)
	return h.clusterMapping.UpdateMapping(ctx, index, uuid, update)
}

// TestUpsertRacedByCreateRetries: an update whose document is missing
// when read creates its upsert; when another request creates the id in
// between, the update is re-read and re-merged under retry_on_conflict,
// as when the document changed between read and write, rather than failing
// as a create would (Elasticsearch retries both).
func TestUpsertRacedByCreateRetries(t *testing.T) {
	ctx := context.Background()
	m := mustMapping(t, map[string]mapping.Field{"a": mapping.NewField(document.Long)})
	up := &hookMapping{clusterMapping: clusterMapping{m: m}}
	h := newHost(t, up)
	s, err := h.Open(ctx, Meta{ID: ID{IndexUUID: "u1"}, Index: "books", Mapping: m})
	if err != nil {
		t.Fatal(err)
	}
	// The upsert adds field b: its create waits for the mapping update,
	// during which another request indexes the id.
	up.hook = func() {
		if _, err := s.IndexDoc(ctx, []byte("1"), []byte(`{"a":1}`), false); err != nil {
			t.Error(err)
		}
	}
	res, err := s.Bulk(ctx, []Op{{Kind: OpUpdate, ID: []byte("1"), Source: []byte(`{"b":2}`), DocAsUpsert: true, RetryOnConflict: 1}}, RefreshImmediate)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil {
		t.Fatalf("update raced by a create: %v, want it retried", res[0].Err)
	}
	got, found, err := s.Get(ctx, []byte("1"), true)
	if err != nil || !found {
		t.Fatal(found, err)
	}
	if src := string(got.Source); src != `{"a":1,"b":2}` {
		t.Fatalf("source %s, want the partial doc merged into the document created meanwhile", src)
	}
}

// TestFailedPromotionClosesReplica: a promotion the replica refuses (here
// an older term than its own) leaves the copy closed — its translog,
// files and background work released — as Promote says, not open but out
// of the host, where nothing would ever close it.
func TestFailedPromotionClosesReplica(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	meta := Meta{ID: ID{IndexUUID: "u1", Shard: 0}, Index: "books", PrimaryTerm: 3}
	r, err := h.OpenReplica(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Promote(ctx, meta.ID, 2, nil); err == nil {
		t.Fatal("promoted to a term older than the replica's")
	}
	if _, err := h.Get(meta.ID); !errors.Is(err, ErrNotHere) {
		t.Fatalf("shard after a failed promotion: %v, want ErrNotHere", err)
	}
	if _, err := r.rep.AcquireReader(); err == nil {
		t.Fatal("the replica is still open after its failed promotion")
	}
}
