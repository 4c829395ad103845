package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/mapping"
)

// TestRecoveryProgress: Open reports its translog replay through a
// Recovery — stages in order, counts within their totals, and at the end
// the newest operation of every id above the commit applied — and after a
// commit and a clean close the next Open replays nothing.
func TestRecoveryProgress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e := mustOpenDurable(t, dir, Options{})
	const committed, ids = 1000, 3000
	bulk := func(from, to int, ver string) {
		t.Helper()
		b := e.NewBulk()
		for i := from; i < to; i++ {
			if _, err := b.Index(ctx, fmt.Appendf(nil, "%d", i), fmt.Appendf(nil, `{"title":"%s"}`, ver)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bulk(0, committed, "v1")
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	bulk(committed, ids, "v1")
	bulk(committed, ids, "v2")
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}

	rec := new(Recovery)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var samples []RecoveryProgress
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			samples = append(samples, rec.Progress())
			time.Sleep(50 * time.Microsecond)
		}
	})
	e, err := openDurable(t, dir, Options{TranslogOptions: TranslogOptions{Recovery: rec}})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close(ctx) }()
	for i, p := range samples {
		if i > 0 && p.Stage < samples[i-1].Stage || p.Ops > p.OpsTotal || p.Bytes > p.BytesTotal {
			t.Fatalf("sample %d: %+v after %+v", i, p, samples[max(0, i-1)])
		}
	}
	want := ids - committed // the newest of two operations per id
	p := e.Recovery().Progress()
	if e.Recovery() != rec || p.Stage != RecoveryDone || p.Replayed != int64(want) || p.Ops != p.OpsTotal ||
		p.Bytes != p.BytesTotal || p.BytesTotal == 0 || p.Elapsed <= 0 || rec.stageTime(RecoveryReplaying) <= 0 {
		t.Fatalf("after Open: %+v", p)
	}
	t.Logf("%d samples; done: %+v (scan %v, apply %v)", len(samples), p, rec.stageTime(RecoveryScanning), rec.stageTime(RecoveryReplaying))
	if got := liveDocs(t, e); len(got) != ids || got[fmt.Sprint(ids-1)] != `{"title":"v2"}` {
		t.Fatalf("%d docs, last %q", len(got), got[fmt.Sprint(ids-1)])
	}

	// A clean shutdown (commit, then close, as shard.Host.Close does)
	// leaves nothing to replay.
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e = mustOpenDurable(t, dir, Options{})
	if p := e.Recovery().Progress(); p.Replayed != 0 || p.Stage != RecoveryDone || e.Stats().NumDocs != ids {
		t.Fatalf("after a clean restart: %+v, %d docs", p, e.Stats().NumDocs)
	}
}

// legacyParser accepts what a version without the UTF-8 check did.
type legacyParser struct{ *MappingParser }

func (p legacyParser) Parse(id, source []byte, doc *document.Document) error {
	return p.ParseReplay(id, source, doc)
}

// TestReplayKeepsAcknowledgedDocuments: a document acknowledged before
// strings had to be UTF-8 (here written through a parser without the
// check) is replayed from the translog by one with it, rather than failing
// the shard's recovery; a new write of the same bytes is refused.
func TestReplayKeepsAcknowledgedDocuments(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := mapping.New(mapping.DynamicTrue, map[string]mapping.Field{"title": mapping.NewField(document.Text)})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := NewMappingParser(m)
	if err != nil {
		t.Fatal(err)
	}
	latin1 := []byte("{\"title\": \"caf\xe9\"}")
	e := mustOpenDurable(t, dir, Options{Parser: legacyParser{mp}})
	if _, err := e.Index(ctx, []byte("old"), latin1); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil { // no commit: the document is in the translog only
		t.Fatal(err)
	}
	e = mustOpenDurable(t, dir, Options{})
	defer e.Close(ctx)
	if got := liveDocs(t, e); got["old"] != string(latin1) {
		t.Fatalf("replayed: %q", got)
	}
	if _, err := e.Index(ctx, []byte("new"), latin1); !errors.Is(err, mapping.ErrDocument) {
		t.Fatalf("a new write of the same bytes: %v", err)
	}
}
