package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-search/sluice/node/engine/index"
)

// checkCheckpointFiles: every file of cp exists in dir with the listed
// length, and the listed checksum is the CRC32 of everything before the
// footer's checksum (computed here, not read from the footer).
func checkCheckpointFiles(t *testing.T, e *Engine, cp *ReplicationCheckpoint) {
	t.Helper()
	for _, f := range cp.Files {
		in, err := e.OpenIndexFile(f.Name)
		if err != nil {
			t.Fatalf("checkpoint file %s: %v", f.Name, err)
		}
		data := in.Bytes()
		if int64(len(data)) != f.Length || crc32.ChecksumIEEE(data[:len(data)-8]) != f.Checksum {
			t.Fatalf("file %s: length %d crc %#x, checkpoint says %d %#x", f.Name, len(data),
				crc32.ChecksumIEEE(data[:len(data)-8]), f.Length, f.Checksum)
		}
		in.Close()
	}
}

// TestCheckpoint: a checkpoint lists the reader's segments with live-docs
// files for those with deletes, every file with its length and checksum;
// the same checkpoint comes back while nothing changes, a new version
// after a refresh; encode/decode round-trips; a commit reuses the
// checkpoint's live-docs files.
func TestCheckpoint(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer e.Close(ctx)
	for i := range 20 {
		applyOps(t, e, []engineOp{{id: fmt.Sprint(i), title: "one two"}})
	}
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	applyOps(t, e, []engineOp{{del: true, id: "3"}, {id: "4", title: "again"}})
	notify := e.RefreshNotify()
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-notify:
	default:
		t.Fatal("RefreshNotify not closed by a refresh")
	}
	cp, err := e.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Release()
	if cp.Term != 1 || cp.SeqNo != 22 || len(cp.Infos.Segments) != 2 {
		t.Fatalf("checkpoint: term %d seq %d segments %d", cp.Term, cp.SeqNo, len(cp.Infos.Segments))
	}
	first := cp.Infos.Segments[0]
	if first.DelCount != 2 || first.LiveDocs == "" || first.DelGen == 0 {
		t.Fatalf("first segment: %+v", first)
	}
	if _, ok := cp.File(first.LiveDocs); !ok {
		t.Fatalf("live docs %s not among the files", first.LiveDocs)
	}
	if err := cp.validate(); err != nil {
		t.Fatal(err)
	}
	checkCheckpointFiles(t, e, cp)

	again, err := e.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != cp.Version {
		t.Fatalf("unchanged reader: version %d then %d", cp.Version, again.Version)
	}
	again.Release()

	data, err := cp.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back.Files) != fmt.Sprint(cp.Files) || back.Version != cp.Version || back.SeqNo != cp.SeqNo ||
		len(back.Infos.Segments) != len(cp.Infos.Segments) {
		t.Fatalf("round trip: %+v", back)
	}
	data[len(data)/2] ^= 1
	if _, err := DecodeCheckpoint(data); !errors.Is(err, ErrInvalidCheckpoint) {
		t.Fatalf("damaged checkpoint: %v", err)
	}

	// The commit finds the checkpoint's live-docs file and writes none.
	si, err := e.Commit(ctx, CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if si.Segments[0].LiveDocs != first.LiveDocs {
		t.Fatalf("commit wrote live docs %s; the checkpoint has %s", si.Segments[0].LiveDocs, first.LiveDocs)
	}
	if si.Counter < first.DelGen {
		t.Fatalf("commit counter %d below a live-docs generation %d", si.Counter, first.DelGen)
	}

	applyOps(t, e, []engineOp{{del: true, id: "5"}})
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := e.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Release()
	if !next.Newer(cp) || next.SeqNo != 23 || next.Infos.Segments[0].DelGen <= first.DelGen {
		t.Fatalf("next checkpoint: version %d seq %d del gen %d", next.Version, next.SeqNo, next.Infos.Segments[0].DelGen)
	}
	checkCheckpointFiles(t, e, next)
}

// TestCheckpointPinsFiles: a retained checkpoint keeps its files — merged
// away, their live docs superseded, a commit in between — until released;
// then they are deleted.
func TestCheckpointPinsFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sched := &heldMerges{}
	e := mustOpenDurable(t, dir, Options{MergePolicy: mergeAll{}, MergeScheduler: sched})
	defer e.Close(ctx)
	for round := range 2 {
		for i := range 10 {
			applyOps(t, e, []engineOp{{id: fmt.Sprint(round*10 + i), title: "x"}})
		}
		if _, err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	applyOps(t, e, []engineOp{{del: true, id: "1"}})
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	cp, err := e.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Infos.Segments) != 2 {
		t.Fatalf("%d segments", len(cp.Infos.Segments))
	}
	if err := sched.runOne(t); err != nil {
		t.Fatal(err)
	}
	applyOps(t, e, []engineOp{{del: true, id: "2"}})
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	later, err := e.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Release()
	if len(later.Infos.Segments) != 1 {
		t.Fatalf("after the merge: %d segments", len(later.Infos.Segments))
	}
	onDisk := func(name string) bool {
		in, err := e.dir.OpenInput(name)
		if err != nil {
			return false
		}
		in.Close()
		return true
	}
	for _, f := range cp.Files {
		if !onDisk(f.Name) {
			t.Fatalf("%s of a retained checkpoint deleted", f.Name)
		}
	}
	checkCheckpointFiles(t, e, cp)
	cp.Release()
	for _, f := range cp.Files {
		if _, still := later.File(f.Name); !still && onDisk(f.Name) {
			t.Errorf("%s still there after its checkpoint was released", f.Name)
		}
	}
	if _, err := e.OpenIndexFile(cp.Files[0].Name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenIndexFile of a released file: %v", err)
	}
	// Nothing leaks: the directory holds the last commit's and the last
	// checkpoint's files, and the translog.
	names, _ := e.dir.ListAll()
	keep := append(slices.Clone(e.w.LastCommit().Files()), "translog")
	for _, f := range later.Files {
		keep = append(keep, f.Name)
	}
	for _, n := range names {
		if !slices.Contains(keep, n) {
			t.Errorf("file %s referenced by nothing", n)
		}
	}
}

// TestCheckpointSkippedDeletes: with refreshes that skip deletes, a
// checkpoint's seqNo stops at the last refresh that applied them.
func TestCheckpointSkippedDeletes(t *testing.T) {
	ctx := context.Background()
	e := mustOpenDurable(t, t.TempDir(), Options{DisableMerges: true})
	defer e.Close(ctx)
	applyOps(t, e, []engineOp{{id: "a", title: "1"}, {id: "b", title: "1"}})
	if _, err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	applyOps(t, e, []engineOp{{id: "a", title: "2"}, {del: true, id: "b"}})
	if _, err := e.w.Refresh(ctx, false); err != nil {
		t.Fatal(err)
	}
	cp, err := e.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Release()
	if cp.SeqNo != 2 || e.Stats().RefreshedSeqNo != 4 {
		t.Fatalf("checkpoint seq %d after a refresh without deletes to 4", cp.SeqNo)
	}
}

// TestDecodeCheckpointRejects: what a replica must never act on.
func TestDecodeCheckpointRejects(t *testing.T) {
	good := func() *ReplicationCheckpoint {
		return &ReplicationCheckpoint{Term: 2, Version: 5, SeqNo: 9, Infos: SegmentInfos{SeqNo: 9, Counter: 4, Segments: []CommitSegment{
			{DelGen: 3, DelCount: 1, LiveDocs: "_1_3.liv", Info: segInfo("_1", 4, "_1.smt", "_1.tim")},
		}}, Files: []FileMeta{{Name: "_1.smt", Length: 10}, {Name: "_1.tim", Length: 10}, {Name: "_1_3.liv", Length: 10}}}
	}
	for name, mutate := range map[string]func(cp *ReplicationCheckpoint){
		"ok": func(cp *ReplicationCheckpoint) {},
		"path": func(cp *ReplicationCheckpoint) {
			cp.Infos.Segments[0].Info.Files[0] = "_1./../x"
			cp.Files[0].Name = "_1./../x"
		},
		"not an index file": func(cp *ReplicationCheckpoint) {
			cp.Infos.Segments[0].Info.Files[1] = "_1.tim/x"
			cp.Files[1].Name = "_1.tim/x"
		},
		"unlisted":     func(cp *ReplicationCheckpoint) { cp.Files = cp.Files[:2] },
		"extra":        func(cp *ReplicationCheckpoint) { cp.Files = append(cp.Files, FileMeta{Name: "_9.x"}) },
		"other seg":    func(cp *ReplicationCheckpoint) { cp.Infos.Segments[0].Info.Files[0] = "_2.smt" },
		"term 0":       func(cp *ReplicationCheckpoint) { cp.Term = 0 },
		"seq mismatch": func(cp *ReplicationCheckpoint) { cp.SeqNo = 8 },
		"del count":    func(cp *ReplicationCheckpoint) { cp.Infos.Segments[0].DelCount = 5 },
		"no live file": func(cp *ReplicationCheckpoint) { cp.Infos.Segments[0].LiveDocs = "" },
		"bad segment":  func(cp *ReplicationCheckpoint) { cp.Infos.Segments[0].Info.Name = "_01" },
		"negative":     func(cp *ReplicationCheckpoint) { cp.Files[0].Length = -1 },
	} {
		cp := good()
		mutate(cp)
		data, err := cp.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeCheckpoint(data)
		if (name == "ok") != (err == nil) || err != nil && !errors.Is(err, ErrInvalidCheckpoint) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeCheckpoint([]byte("SLCP")); !errors.Is(err, ErrInvalidCheckpoint) || !strings.Contains(err.Error(), "header") {
		t.Errorf("short: %v", err)
	}
}

// FuzzDecodeCheckpoint: decoding never panics, and what it accepts
// re-encodes to a checkpoint that decodes the same.
func FuzzDecodeCheckpoint(f *testing.F) {
	cp := &ReplicationCheckpoint{Term: 2, Version: 5, SeqNo: 9, Infos: SegmentInfos{SeqNo: 9, Counter: 4, Segments: []CommitSegment{
		{DelGen: 3, DelCount: 1, LiveDocs: "_1_3.liv", Info: segInfo("_1", 4, "_1.smt", "_1.tim")},
	}}, Files: []FileMeta{{Name: "_1.smt", Length: 10}, {Name: "_1.tim", Length: 10}, {Name: "_1_3.liv", Length: 10}}}
	data, _ := cp.MarshalBinary()
	f.Add(data)
	f.Add([]byte("SLCP\x01{}\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cp, err := DecodeCheckpoint(data)
		if err != nil {
			return
		}
		again, err := cp.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeCheckpoint(again)
		if err != nil || fmt.Sprint(back) != fmt.Sprint(cp) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, cp, back)
		}
	})
}

// FuzzDecodeCheckpointBody: the same, past the framing — arbitrary JSON
// bodies, framed correctly, so the fuzzer reaches validation.
func FuzzDecodeCheckpointBody(f *testing.F) {
	f.Add([]byte(`{"term":2,"version":1,"seq_no":0,"infos":{"generation":0,"seq_no":0,"counter":0,"segments":[]},"files":[]}`))
	f.Add([]byte(`{"term":2,"version":1,"seq_no":3,"infos":{"seq_no":3,"counter":1,"segments":[{"info":{"Name":"_0","MaxDoc":2,"Files":["_0.smt"]},"del_gen":0,"del_count":0}]},"files":[{"name":"_0.smt","length":5}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		data := append([]byte(checkpointMagic+"\x01"), body...)
		data = append(data, 0, 0, 0, 0)
		n := len(data) - 4
		crc := crc32.ChecksumIEEE(data[:n])
		data[n], data[n+1], data[n+2], data[n+3] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
		cp, err := DecodeCheckpoint(data)
		if err != nil {
			return
		}
		for _, f := range cp.Files {
			if !validIndexFileName(f.Name) || strings.ContainsAny(f.Name, "/\\") {
				t.Fatalf("accepted file name %q", f.Name)
			}
		}
	})
}

// segInfo builds a segment's info for checkpoint tests.
func segInfo(name string, maxDoc int, files ...string) (info index.SegmentInfo) {
	info.Name, info.MaxDoc, info.Files = name, maxDoc, files
	return info
}
