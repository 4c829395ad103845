package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-search/sluice/node/engine/translog"
)

// The crash test (issue 4): a child process — this test binary re-run as
// TestCrashChild — indexes, updates, creates and deletes with Request
// durability from several goroutines, in single operations and bulks, and
// commits now and then; it prints every operation before it starts and
// again once acknowledged, with its seqNo. Most ids belong to one
// goroutine; a few are shared, so concurrent writes to one id land in the
// translog out of seqNo order and replay must still let the highest
// acknowledged seqNo win. The parent SIGKILLs it at a random moment,
// reopens the index (with a full integrity check) and checks that every
// acknowledged operation's effect is there, and that every document is one
// that was sent: for each id, the live state is its last acknowledged
// state or the effect of an operation that was in flight at the kill.
// Before reopening, each round also damages the last record the translog
// checkpoint records as synced, in a copy, and checks that Open refuses it
// rather than cutting it as a torn tail (checkSyncedGuarded).
//
// SLUICE_CRASH_ITERATIONS sets the number of kill/recover rounds (default
// 5); each round continues on the index the previous one recovered.

const (
	envCrashChild = "SLUICE_CRASH_CHILD" // index directory: run as the child
	envCrashSeed  = "SLUICE_CRASH_SEED"
	crashWriters  = 3
	crashIDs      = 200 // per writer
	crashShared   = 10  // ids every writer writes
)

// crashSource is the _source of version ver of id: the parent recomputes
// it to check that every stored document is one that was sent, byte for
// byte. The padding varies so flushes and merges happen.
func crashSource(id, ver string) string {
	r := rand.New(rand.NewPCG(uint64(len(ver)), uint64(len(id))))
	for _, c := range ver {
		r = rand.New(rand.NewPCG(r.Uint64(), uint64(c)))
	}
	pad := strings.Repeat("lorem ipsum ", 5+r.IntN(60))
	return fmt.Sprintf(`{"title":"%s %s %s","v":%q}`, id, ver, pad, ver)
}

// crashLog writes one line per call; a line is one write(2) to a pipe, so
// a kill cannot split it.
type crashLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *crashLog) printf(format string, args ...any) {
	line := fmt.Sprintf("@@"+format+"\n", args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := io.WriteString(l.w, line); err != nil {
		os.Exit(3)
	}
}

// TestCrashChild is the child process's body; skipped in normal runs.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashChild)
	if dir == "" {
		t.Skip("run by TestCrashRecovery")
	}
	seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
	out := &crashLog{w: os.Stdout}
	fail := func(err error) {
		out.printf("E %v", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(2)
	}
	ctx := context.Background()
	e, err := openDurable(t, dir, Options{RAMBufferBytes: 1 << 20, RefreshInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fail(err)
	}
	out.printf("R")
	go func() { // commits at random intervals, so kills land in them too
		r := rand.New(rand.NewPCG(seed, 99))
		for n := 1; ; n++ {
			time.Sleep(time.Duration(20+r.IntN(100)) * time.Millisecond)
			out.printf("C %d", n)
			if _, err := e.Commit(ctx, CommitOptions{}); err != nil {
				fail(err)
			}
			out.printf("c %d", n)
		}
	}()
	for g := range crashWriters {
		go func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for n := 0; ; n++ {
				ops := 1
				var b *Bulk
				if r.IntN(5) == 0 {
					b, ops = e.NewBulk(), 2+r.IntN(15)
				}
				var acks []string
				for range ops {
					id := fmt.Sprintf("%d-%d", g, r.IntN(crashIDs))
					if r.IntN(6) == 0 {
						id = fmt.Sprintf("s-%d", r.IntN(crashShared))
					}
					ver := fmt.Sprintf("%d.%d.%d", seed, g, n)
					n++
					kind := "I"
					switch x := r.IntN(20); {
					case x < 4:
						kind = "D"
					case x < 7:
						kind = "C"
					}
					out.printf("S %s %s %s", id, kind, ver)
					var w DocWriter = e
					if b != nil {
						w = b
					}
					var res Result
					var err error
					switch kind {
					case "D":
						res, err = w.Delete(ctx, []byte(id))
					case "C":
						res, err = w.Create(ctx, []byte(id), []byte(crashSource(id, ver)))
					default:
						res, err = w.Index(ctx, []byte(id), []byte(crashSource(id, ver)))
					}
					switch {
					case errors.Is(err, ErrDocumentExists):
						out.printf("X %s %s", id, ver) // no effect
					case err != nil:
						fail(err)
					case b != nil:
						acks = append(acks, fmt.Sprintf("%s %s %d", id, ver, res.SeqNo))
					default:
						out.printf("A %s %s %d", id, ver, res.SeqNo)
					}
				}
				if b != nil {
					if err := b.Sync(ctx); err != nil {
						fail(err)
					}
					for _, a := range acks {
						out.printf("A %s", a)
					}
				}
			}
		}()
	}
	select {} // until killed
}

// crashOp is an operation the child started.
type crashOp struct {
	kind, ver string
}

// docState is an id's state: present with version ver, or absent.
type docState struct {
	present bool
	ver     string
}

func (s docState) String() string {
	if !s.present {
		return "absent"
	}
	return "v" + s.ver
}

func (op crashOp) effect() docState {
	if op.kind == "D" {
		return docState{}
	}
	return docState{present: true, ver: op.ver}
}

// ackedState is an id's acknowledged state: the effect of the acknowledged
// operation with the highest seqNo (0: from the previous round, whose
// numbers are all lower).
type ackedState struct {
	docState
	seq int64
}

// crashRound is what the parent learned from one child's output.
type crashRound struct {
	acked       map[string]ackedState // per id
	pending     map[string][]crashOp  // started, not acknowledged
	ackedOps    int
	commits     int  // commits begun
	inCommit    bool // killed between "C n" and "c n"
	childFailed string
}

// parseCrashOutput replays the child's lines over the state before.
func parseCrashOutput(lines []string, before map[string]docState) (*crashRound, error) {
	cr := &crashRound{acked: make(map[string]ackedState, len(before)), pending: map[string][]crashOp{}}
	for id, s := range before {
		cr.acked[id] = ackedState{docState: s}
	}
	take := func(id, ver string) (crashOp, error) {
		for i, op := range cr.pending[id] {
			if op.ver == ver {
				cr.pending[id] = append(cr.pending[id][:i], cr.pending[id][i+1:]...)
				return op, nil
			}
		}
		return crashOp{}, fmt.Errorf("ack of %s %s never started", id, ver)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "R":
		case "E":
			cr.childFailed = line
		case "C":
			cr.commits++
			cr.inCommit = true
		case "c":
			cr.inCommit = false
		case "S":
			cr.pending[f[1]] = append(cr.pending[f[1]], crashOp{kind: f[2], ver: f[3]})
		case "A", "X":
			op, err := take(f[1], f[2])
			if err != nil {
				return nil, err
			}
			if f[0] == "A" {
				seq, err := strconv.ParseInt(f[3], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("line %q: %v", line, err)
				}
				if seq > cr.acked[f[1]].seq {
					cr.acked[f[1]] = ackedState{docState: op.effect(), seq: seq}
				}
				cr.ackedOps++
			}
		default:
			return nil, fmt.Errorf("unknown line %q", line)
		}
	}
	return cr, nil
}

// runCrashChild starts the crash child on dir (runTestChild).
func runCrashChild(t *testing.T, dir string, seed uint64, kill func(line string) bool, maxRun time.Duration) []string {
	t.Helper()
	return runTestChild(t, "TestCrashChild", []string{envCrashChild + "=" + dir, envCrashSeed + "=" + strconv.FormatUint(seed, 10)}, kill, maxRun)
}

// runTestChild runs this test binary's test as a child process with env
// added, and SIGKILLs it when kill (given each "@@" output line as it
// arrives) says so, or after maxRun. It returns the child's output lines.
func runTestChild(t *testing.T, test string, env []string, kill func(line string) bool, maxRun time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killNow := make(chan struct{}, 1)
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l, ok := strings.CutPrefix(sc.Text(), "@@")
			if !ok {
				continue
			}
			lines = append(lines, l)
			if kill(l) {
				select {
				case killNow <- struct{}{}:
				default:
				}
			}
		}
	}()
	select {
	case <-killNow:
	case <-time.After(maxRun):
	case <-done:
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\nstderr: %s\nlast lines: %q", err, tail(stderr.String(), 2000), lastN(lines, 5))
	}
	return lines
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

func lastN(s []string, n int) []string { return s[max(0, len(s)-n):] }

// verifyCrashRound reopens dir and checks it against the round; it returns
// the recovered state (the next round's starting point) and the number of
// acknowledged ops whose effect is missing.
func verifyCrashRound(t *testing.T, dir string, cr *crashRound) (map[string]docState, int) {
	t.Helper()
	e, err := openDurable(t, dir, Options{TranslogOptions: TranslogOptions{CheckIntegrityOnOpen: true},
		Logger: quietEngineLogger()})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer e.Close(context.Background())
	docs := liveDocs(t, e)
	now := make(map[string]docState, len(docs))
	for id, src := range docs {
		i := strings.LastIndex(src, `"v":"`)
		if i < 0 {
			t.Fatalf("id %s: document never sent: %.80q", id, src)
		}
		ver := strings.TrimSuffix(src[i+len(`"v":"`):], `"}`)
		if want := crashSource(id, ver); src != want {
			t.Fatalf("id %s: content was never sent:\n got %.120q\nwant %.120q", id, src, want)
		}
		now[id] = docState{present: true, ver: ver}
	}
	lost := 0
	ids := map[string]bool{}
	for id := range cr.acked {
		ids[id] = true
	}
	for id := range now {
		ids[id] = true
	}
	for id := range ids {
		got, want := now[id], cr.acked[id]
		if got == want.docState {
			continue
		}
		explained := false
		for _, op := range cr.pending[id] {
			explained = explained || op.effect() == got
		}
		if !explained {
			lost++
			t.Errorf("id %s: recovered %v, acknowledged %v (seq %d), in flight %v", id, got, want.docState, want.seq, cr.pending[id])
		}
	}
	return now, lost
}

func crashIterations(t *testing.T) int {
	if s := os.Getenv("SLUICE_CRASH_ITERATIONS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_CRASH_ITERATIONS=%q", s)
		}
		return n
	}
	return 5
}

// TestCrashRecovery kills the child at random moments.
func TestCrashRecovery(t *testing.T) {
	testCrash(t, func(r *rand.Rand) (func(string) bool, time.Duration) {
		return func(string) bool { return false }, time.Duration(50+r.IntN(600)) * time.Millisecond
	})
}

// TestCrashDuringSync kills the child a few hundred microseconds after an
// acknowledgment, while the writers' next syncs — an fsync of the
// translog, then of its checkpoint — are running.
func TestCrashDuringSync(t *testing.T) {
	testCrash(t, func(r *rand.Rand) (func(string) bool, time.Duration) {
		nth := 50 + r.IntN(2000)
		delay := time.Duration(r.IntN(300)) * time.Microsecond
		acks := 0
		return func(l string) bool {
			if strings.HasPrefix(l, "A ") {
				if acks++; acks == nth {
					time.Sleep(delay)
					return true
				}
			}
			return false
		}, 5 * time.Second
	})
}

// TestCrashDuringCommit kills the child just after it starts a commit
// (within a few milliseconds: the commit's refresh, fsyncs, or rename).
func TestCrashDuringCommit(t *testing.T) {
	testCrash(t, func(r *rand.Rand) (func(string) bool, time.Duration) {
		nth := 1 + r.IntN(3)
		delay := time.Duration(r.IntN(4000)) * time.Microsecond
		return func(l string) bool {
			if l == fmt.Sprintf("C %d", nth) {
				time.Sleep(delay)
				return true
			}
			return false
		}, 5 * time.Second
	})
}

func testCrash(t *testing.T, plan func(*rand.Rand) (kill func(string) bool, maxRun time.Duration)) {
	if testing.Short() {
		t.Skip("crash test starts processes")
	}
	if os.Getenv(envCrashChild) != "" {
		t.Skip("in the child")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	state := map[string]docState{}
	var acked, lost, inCommit, replays, guarded int
	for it := range crashIterations(t) {
		kill, maxRun := plan(r)
		lines := runCrashChild(t, dir, r.Uint64()>>1, kill, maxRun)
		cr, err := parseCrashOutput(lines, state)
		if err != nil {
			t.Fatalf("round %d: %v", it, err)
		}
		if cr.childFailed != "" {
			t.Fatalf("round %d: child failed: %s", it, cr.childFailed)
		}
		if checkSyncedGuarded(t, dir) {
			guarded++
		}
		var n int
		state, n = verifyCrashRound(t, dir, cr)
		acked += cr.ackedOps
		lost += n
		if cr.inCommit {
			inCommit++
		}
		if cr.ackedOps > 0 {
			replays++
		}
		if t.Failed() {
			t.Fatalf("round %d: %d acknowledged ops lost", it, n)
		}
	}
	st, _ := translogStatsOf(dir)
	t.Logf("%d rounds: %d acknowledged ops, %d lost; killed inside a commit %d times; a damaged last synced record refused in %d; %d live docs; translog at end %d ops / %d bytes",
		crashIterations(t), acked, lost, inCommit, guarded, len(state), st.Ops, st.SizeBytes)
	if acked == 0 {
		t.Fatal("the child acknowledged nothing")
	}
}

// checkSyncedGuarded damages, in a copy of the killed child's shard, the
// last record its translog checkpoint records as synced (the newest
// acknowledged one, or newer) and checks that Open refuses it, naming the
// file, instead of cutting it as a torn tail. It reports whether the
// current generation held a synced record to damage.
func checkSyncedGuarded(t *testing.T, dir string) bool {
	t.Helper()
	ckp, err := translog.ReadCheckpoint(filepath.Join(dir, "translog"))
	if errors.Is(err, os.ErrNotExist) {
		// Killed before the engine first wrote its checkpoint (a slow
		// start under -race): nothing was synced, nothing to damage.
		return false
	}
	if err != nil {
		t.Fatalf("checkpoint after the kill: %v", err)
	}
	if ckp.Ops == 0 {
		return false
	}
	image := crashImage(t, dir)
	tlog, synced := lastSyncedRecordEnd(t, image)
	flipByte(t, tlog, synced-1)
	e, err := openDurable(t, image, Options{Logger: quietEngineLogger()})
	if err == nil {
		e.Close(context.Background())
		t.Fatalf("the last synced record of %s (ending at %d) was damaged and Open accepted it", tlog, synced)
	}
	if !errors.Is(err, translog.ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(tlog)) {
		t.Fatalf("damaged synced record: %v", err)
	}
	os.RemoveAll(image)
	return true
}

func translogStatsOf(dir string) (translog.Stats, error) {
	tl, err := translog.Open(context.Background(), dir+"/translog", translog.Options{Logger: quietEngineLogger()})
	if err != nil {
		return translog.Stats{}, err
	}
	defer tl.Close()
	return tl.Stats(), nil
}
