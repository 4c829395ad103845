package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/document"
	"github.com/sluice-search/sluice/node/engine/index"
	"github.com/sluice-search/sluice/node/engine/store"
)

func TestCommitAndReopen(t *testing.T) {
	ctx := context.Background()
	dir := store.NewRAMDirectory()
	codec := testCodec(t)
	open := func() *IndexWriter {
		w, err := NewIndexWriter(WriterOptions{Directory: dir, Codec: codec, RAMBufferBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := open()
	var doc document.Document
	for i := range 50 {
		w.Update(ctx, fmt.Appendf(nil, "%d", i), makeDoc(&doc, fmt.Sprint(i), 1, 5))
	}
	mustRefresh(t, w, true)
	for i := range 10 { // deletes into the first segment: a live-docs file
		w.Delete(ctx, fmt.Appendf(nil, "%d", i))
	}
	w.Update(ctx, []byte("20"), makeDoc(&doc, "20", 2, 5))
	si, err := w.Commit(ctx, CommitOptions{UserData: map[string]string{"translog": "7"}})
	if err != nil {
		t.Fatal(err)
	}
	if si.Generation != 1 || si.SeqNo != 61 {
		t.Fatalf("commit gen %d seq %d", si.Generation, si.SeqNo)
	}
	// Uncommitted work is lost on close; its files are removed.
	w.Update(ctx, []byte("99"), makeDoc(&doc, "99", 1, 5))
	mustRefresh(t, w, true)
	w.Close()

	w = open()
	defer w.Close()
	r := w.Acquire()
	got := contents(t, r)
	r.Release()
	if _, has5 := got["5"]; len(got) != 40 || got["20"] != 2 || has5 {
		t.Fatalf("reopened index: %d docs, 20=%d", len(got), got["20"])
	}
	if _, ok := got["99"]; ok {
		t.Fatal("uncommitted doc survived")
	}
	if c := w.LastCommit(); c == nil || c.UserData["translog"] != "7" {
		t.Fatalf("user data lost: %+v", c)
	}
	names, _ := dir.ListAll()
	for _, n := range names {
		if !strings.HasPrefix(n, "segments_") && w.fd.refCount(n) == 0 {
			t.Fatalf("unreferenced file %s left after open", n)
		}
	}
	// Sequence numbers continue; a second commit replaces the first.
	seq, created, _ := w.Update(ctx, []byte("20"), makeDoc(&doc, "20", 3, 5))
	if seq != 62 || created {
		t.Fatalf("after reopen: seq %d created %v", seq, created)
	}
	si2, err := w.Commit(ctx, CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dir.FileExists(commitFileName(si.Generation)) || !dir.FileExists(commitFileName(si2.Generation)) {
		t.Fatal("old commit point not replaced")
	}
}

func TestCorruptCommitPoint(t *testing.T) {
	si := &SegmentInfos{Generation: 3, SeqNo: 9}
	data, err := encodeSegmentInfos(si)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x40
		if _, err := DecodeSegmentInfos(bad); !errors.Is(err, index.ErrCorrupt) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
	got, err := DecodeSegmentInfos(data)
	if err != nil || got.Generation != 3 || got.SeqNo != 9 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
}

func FuzzDecodeSegmentInfos(f *testing.F) {
	data, _ := encodeSegmentInfos(&SegmentInfos{Generation: 1, Segments: []CommitSegment{{Info: index.SegmentInfo{Name: "_1", MaxDoc: 3}}}})
	f.Add(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		si, err := DecodeSegmentInfos(b)
		if err == nil && si == nil {
			t.Fatal("nil without error")
		}
	})
}

func TestIDBloom(t *testing.T) {
	ti := newTestWriter(t, 16<<20)
	var doc document.Document
	for i := range 2000 {
		ti.w.Add(context.Background(), makeDoc(&doc, fmt.Sprint(i), 1, 1))
	}
	mustRefresh(t, ti.w, true)
	r := ti.w.Acquire()
	defer r.Release()
	b := r.segs[0].bloom
	for i := range 2000 {
		if !b.mayContain(fmt.Appendf(nil, "%d", i)) {
			t.Fatalf("id %d missing from the filter", i)
		}
	}
	fp := 0
	for i := range 10000 {
		if b.mayContain(fmt.Appendf(nil, "x%d", i)) {
			fp++
		}
	}
	if fp > 300 { // expect ~1-2%
		t.Fatalf("%d false positives in 10000", fp)
	}
}

func TestOpenWithoutCommitDeletesLeftovers(t *testing.T) {
	ctx := context.Background()
	dir := store.NewRAMDirectory()
	open := func() *IndexWriter {
		w, err := NewIndexWriter(WriterOptions{Directory: dir, Codec: testCodec(t)})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	// A process flushes a segment and dies before any commit: its files
	// stay behind.
	w := open()
	var doc document.Document
	w.Update(ctx, []byte("a"), makeDoc(&doc, "a", 1, 3))
	mustRefresh(t, w, true)
	leftovers := segFiles(w.Acquire())
	// (no Close: a crash)
	w2 := open()
	defer w2.Close()
	for _, f := range leftovers {
		if dir.FileExists(f) {
			t.Fatalf("leftover %s not deleted", f)
		}
	}
	w2.Update(ctx, []byte("b"), makeDoc(&doc, "b", 1, 3))
	if _, err := w2.Refresh(ctx, true); err != nil {
		t.Fatalf("flush after reopening over leftovers: %v", err)
	}
}
