package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/store"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// The replica crash test: a child process (this binary as
// TestReplicaCrashChild) opens a replica, appends the primary's newest
// operations (ApplyOps, acknowledged with "A"), installs the primary's
// newest checkpoint — fetching each file slowly from the primary's
// directory ("F" per file), publishing ("I") — and commits it ("C" ... "c").
// The parent, which holds the primary and its checkpoint in process,
// SIGKILLs the child at a random point of that, then reopens the replica
// and checks it: it opens; it shows its last commit's documents (the new
// checkpoint's if the commit finished, the previous one's if it never
// began, either in between); no fetched-but-unpublished file is left; every
// acknowledged operation is in its translog. It then installs and commits
// the checkpoint itself and goes on with the next round.

const (
	envReplicaCrashChild   = "SLUICE_REPLICA_CRASH_CHILD" // the replica's directory
	envReplicaCrashPrimary = "SLUICE_REPLICA_CRASH_PRIMARY"
	envReplicaCrashInput   = "SLUICE_REPLICA_CRASH_INPUT" // a file: the checkpoint and the ops
)

// replicaCrashInput is what the parent hands the child.
type replicaCrashInput struct {
	Checkpoint []byte        `json:"checkpoint"`
	Term       int64         `json:"term"`
	Ops        []translog.Op `json:"ops"`
}

// TestReplicaCrashChild is the child's body; skipped in normal runs.
func TestReplicaCrashChild(t *testing.T) {
	dir := os.Getenv(envReplicaCrashChild)
	if dir == "" {
		t.Skip("run by TestReplicaCrashDuringInstall")
	}
	out := &crashLog{w: os.Stdout}
	fail := func(err error) {
		out.printf("E %v", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(2)
	}
	ctx := context.Background()
	data, err := os.ReadFile(os.Getenv(envReplicaCrashInput))
	if err != nil {
		fail(err)
	}
	var in replicaCrashInput
	if err := json.Unmarshal(data, &in); err != nil {
		fail(err)
	}
	cp, err := DecodeCheckpoint(in.Checkpoint)
	if err != nil {
		fail(err)
	}
	opts := durableOptions(t, dir, Options{Logger: quietEngineLogger()})
	r, err := OpenReplica(ctx, opts)
	if err != nil {
		fail(err)
	}
	out.printf("R")
	if len(in.Ops) > 0 {
		st, err := r.ApplyOps(ctx, in.Term, in.Ops)
		if err != nil {
			fail(err)
		}
		out.printf("A %d", st.MaxSeqNo)
	}
	primary := os.Getenv(envReplicaCrashPrimary)
	fetch := func(ctx context.Context, f FileMeta, w io.Writer) error {
		b, err := os.ReadFile(filepath.Join(primary, f.Name))
		if err != nil {
			return err
		}
		for len(b) > 0 { // slowly, so kills land inside copies
			n := min(len(b), 16<<10)
			if _, err := w.Write(b[:n]); err != nil {
				return err
			}
			b = b[n:]
			time.Sleep(100 * time.Microsecond)
		}
		out.printf("F %s", f.Name)
		return nil
	}
	res, err := r.InstallCheckpoint(ctx, cp, fetch)
	if err != nil {
		fail(err)
	}
	out.printf("I %d %d", res.SeqNo, res.Fetched)
	out.printf("C")
	if _, err := r.Commit(ctx); err != nil {
		fail(err)
	}
	out.printf("c")
	select {}
}

// TestReplicaCrashDuringInstall: see the comment above.
func TestReplicaCrashDuringInstall(t *testing.T) {
	ctx := context.Background()
	rounds := crashIterations(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	pdir, rdir := t.TempDir(), t.TempDir()
	// The primary writes straight to disk (no NRT cache): the child reads
	// its files by path.
	fsd, err := store.NewFSDirectory(pdir)
	if err != nil {
		t.Fatal(err)
	}
	e := mustOpenDurable(t, pdir, Options{Directory: fsd, TranslogOptions: TranslogOptions{TranslogPath: filepath.Join(t.TempDir(), "translog")}})
	defer e.Close(ctx)
	r := mustOpenReplica(t, rdir, Options{Logger: quietEngineLogger()})
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	committed := map[string]string{} // the replica's last commit's documents
	var sent int64
	kills := map[string]int{}
	for round := range rounds {
		for i := range 40 + rng.IntN(200) {
			id := strconv.Itoa(rng.IntN(400))
			if rng.IntN(8) == 0 {
				applyOps(t, e, []engineOp{{del: true, id: id}})
				continue
			}
			applyOps(t, e, []engineOp{{id: id, title: fmt.Sprintf("round %d doc %d %s", round, i, strings.Repeat("pad ", rng.IntN(200)))}})
			if rng.IntN(60) == 0 {
				if _, err := e.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		ops := translogOps(t, e, uint64(sent)+1)
		cp := refreshCheckpoint(t, e)
		want := liveDocs(t, e)
		data, err := json.Marshal(replicaCrashInput{Checkpoint: mustMarshal(t, cp), Term: e.PrimaryTerm(), Ops: ops})
		if err != nil {
			t.Fatal(err)
		}
		input := filepath.Join(t.TempDir(), "input.json")
		if err := os.WriteFile(input, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// Kill at the n-th event: a fetched file, the publication, the
		// commit's start or end — or at a random time.
		target := rng.IntN(len(cp.Files) + 4)
		events := 0
		lines := runTestChild(t, "TestReplicaCrashChild", []string{envReplicaCrashChild + "=" + rdir,
			envReplicaCrashPrimary + "=" + pdir, envReplicaCrashInput + "=" + input},
			func(l string) bool {
				if l != "R" && !strings.HasPrefix(l, "A ") {
					events++
				}
				return events > target
			}, time.Duration(20+rng.IntN(400))*time.Millisecond)
		var acked int64 = -1
		began, done, fetched := false, false, 0
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "E "):
				t.Fatalf("child failed: %s", l)
			case strings.HasPrefix(l, "A "):
				acked, _ = strconv.ParseInt(l[2:], 10, 64)
			case strings.HasPrefix(l, "F "):
				fetched++
			case l == "C":
				began = true
			case l == "c":
				done = true
			}
		}
		switch {
		case done:
			kills["after the commit"]++
		case began:
			kills["inside the commit"]++
		case fetched > 0:
			kills["inside the install"]++
		default:
			kills["before any file"]++
		}

		r := mustOpenReplica(t, rdir, Options{Logger: quietEngineLogger()})
		names, err := r.dir.ListAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".part") {
				t.Fatalf("round %d: %s left after the reopen", round, n)
			}
		}
		rd := r.Acquire()
		got := readerDocs(t, rd)
		rd.Release()
		switch {
		case done && !maps.Equal(got, want), !began && !maps.Equal(got, committed),
			began && !done && !maps.Equal(got, want) && !maps.Equal(got, committed):
			t.Fatalf("round %d (commit began %v, done %v): reopened replica has %d docs; the new checkpoint %d, the last commit %d",
				round, began, done, len(got), len(want), len(committed))
		}
		if st := r.State(); acked >= 0 && st.LocalCheckpoint < acked {
			t.Fatalf("round %d: acknowledged ops up to %d, the reopened replica holds up to %d", round, acked, st.LocalCheckpoint)
		}
		// Catch up as the node would (a resent op is a duplicate replay
		// drops), and check the copy.
		if acked < 0 {
			replicateFrom(t, e, r, sent)
		}
		for _, op := range ops {
			sent = max(sent, int64(op.SeqNo))
		}
		if _, err := r.InstallCheckpoint(ctx, cp, fetchFrom(e, nil)); err != nil {
			t.Fatal(err)
		}
		sameView(t, e, r)
		if _, err := r.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		cp.Release()
		committed = want
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rounds; kills: %v", rounds, kills)
}
