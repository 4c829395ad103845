// Package recoverybench is `sluice bench recovery` (issue 17's target:
// peer recovery copies files at ≥ 80 % of the machine's disk-to-disk copy
// rate when not throttled). On a two-node process cluster it loads one
// shard to a size, then, alternating in each round which runs first:
//
//   - copy: a plain copy of the primary's segment files into a scratch
//     directory on the same disk (read, write, fsync per file and of the
//     directory), timed;
//   - recovery: number_of_replicas 0 → 1, so the other node's new replica
//     recovers from the primary with --recovery-max-bytes-per-sec -1
//     (unthrottled); its bytes fetched and time are the replica's own
//     report ("replica recovered from its primary": from the recovery's
//     start to the primary saying done, so the handshake and the
//     operations phase count against it), and the time of its file
//     phase alone (files_took: every file fetched, verified, fsynced and
//     committed). Then back to 0 replicas: the node deletes the copy (the
//     shard is fully active on the primary's node), so the next round
//     fetches every file again.
//
// Both copy the same files, read once just before (so the page cache
// holds them for both), and fsync what they write; the result is the
// medians' ratios — the file phase's, which is what the target is about,
// and the whole recovery's — with the machine's load average before and
// after. With ProfileSeconds, both nodes serve the Go profiler and, after
// the rounds, recoveries run back to back while each node records a CPU
// profile and then an execution trace into Out.
package recoverybench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/sluice-search/sluice/bench/corpus"
	"github.com/sluice-search/sluice/bench/proccluster"
	"github.com/sluice-search/sluice/bench/report"
	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Target is the floor for recovery against a plain copy.
const Target = 0.8

// Options configure a run.
type Options struct {
	Binary string // the sluice binary to run the cluster with
	SizeMB int    // the shard's size on disk to load to; default 256
	Rounds int    // rounds of copy + recovery; default 3
	// ProfileSeconds > 0: after the rounds, each node's CPU profile and
	// then execution trace over that many seconds of recoveries, into Out.
	ProfileSeconds int
	Docs           []corpus.Doc
	CorpusDesc     string
	Out            string
	Log            io.Writer
}

// Round is one copy and one recovery of the shard's files.
type Round struct {
	Round           int     `json:"round"`
	CopyFirst       bool    `json:"copy_first"`
	CopyMB          float64 `json:"copy_mb"`
	CopySeconds     float64 `json:"copy_seconds"`
	CopyMBPerS      float64 `json:"copy_mb_per_s"`
	RecoveryMB      float64 `json:"recovery_mb"`
	RecoveryFiles   int     `json:"recovery_files"`
	RecoverySeconds float64 `json:"recovery_seconds"`
	RecoveryMBPerS  float64 `json:"recovery_mb_per_s"`
	// The file phase alone: fetched, verified, fsynced and committed.
	FilesSeconds float64 `json:"files_seconds"`
	FilesMBPerS  float64 `json:"files_mb_per_s"`
	// CPU seconds each node used per GB recovered (from the replica's
	// addition to green; /proc, 10 ms ticks): steadier than the rates
	// on a machine others load.
	PrimaryCPUPerGB float64 `json:"primary_cpu_s_per_gb"`
	ReplicaCPUPerGB float64 `json:"replica_cpu_s_per_gb"`
	// The plain copy's: this process's CPU over the copy (getrusage).
	CopyCPUPerGB float64 `json:"copy_cpu_s_per_gb"`
}

// Result is the whole experiment.
type Result struct {
	Corpus         string  `json:"corpus"`
	ShardMB        float64 `json:"shard_mb"`
	ShardFiles     int     `json:"shard_files"`
	Docs           int     `json:"docs"`
	Rounds         []Round `json:"rounds"`
	CopyMBPerS     float64 `json:"copy_mb_per_s_median"`
	RecoveryMBPerS float64 `json:"recovery_mb_per_s_median"`
	FilesMBPerS    float64 `json:"files_mb_per_s_median"`
	// Medians of the rounds' CPU seconds per GB recovered.
	PrimaryCPUPerGB float64 `json:"primary_cpu_s_per_gb_median"`
	ReplicaCPUPerGB float64 `json:"replica_cpu_s_per_gb_median"`
	CopyCPUPerGB    float64 `json:"copy_cpu_s_per_gb_median"`
	// Medians of the rounds' ratios to the plain copy run beside them
	// (steadier than the medians' ratio when foreign load drifts): the
	// whole recovery's and its file phase's.
	Ratio      float64 `json:"ratio"`
	FilesRatio float64 `json:"files_ratio"`
	Target     float64 `json:"target"`
	LoadBefore string  `json:"loadavg_before"`
	LoadAfter  string  `json:"loadavg_after"`
}

const index = "recovery"

// Execute runs the experiment.
func Execute(ctx context.Context, o Options) (*Result, error) {
	if o.SizeMB <= 0 {
		o.SizeMB = 256
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if len(o.Docs) == 0 {
		return nil, errors.New("recovery bench: no documents")
	}
	dir, err := os.MkdirTemp("", "sluice-bench-recovery-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	co := proccluster.Options{Binary: o.Binary, Dir: dir, Nodes: 2,
		NodeArgs: []string{"--log-level", "info", "--recovery-max-bytes-per-sec", "-1"}}
	metrics := make([]string, co.Nodes)
	if o.ProfileSeconds > 0 {
		if o.Out == "" {
			return nil, errors.New("recovery bench: profiles need an output directory")
		}
		for i := range metrics {
			if metrics[i], err = proccluster.FreeAddr(); err != nil {
				return nil, err
			}
		}
		co.NodeArgsFor = func(i int) []string { return []string{"--metrics-listen", metrics[i], "--enable-pprof"} }
	}
	cl, err := proccluster.Start(ctx, co)
	if err != nil {
		return nil, err
	}
	defer cl.Stop()
	c := cl.Client
	res := &Result{Corpus: o.CorpusDesc, Target: Target}
	if _, err := c.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: index, WaitForActiveShards: true,
		Settings: &sluicev1.IndexSettings{NumberOfShards: 1}}); err != nil {
		return nil, err
	}
	primary, uuid, err := locate(ctx, c)
	if err != nil {
		return nil, err
	}
	replica := cl.Nodes[0].Name
	if replica == primary {
		replica = cl.Nodes[1].Name
	}
	shardDir, replicaDir := filepath.Join(dir, primary, uuid, "0"), filepath.Join(dir, replica, uuid, "0")
	// Load passes of the corpus under new ids until the shard is big
	// enough, then let merges settle.
	for pass := 0; ; pass++ {
		docs := make([]corpus.Doc, len(o.Docs))
		for i, d := range o.Docs {
			d.ID = fmt.Sprintf("p%d-%s", pass, d.ID)
			docs[i] = d
		}
		if err := proccluster.BulkLoad(ctx, c, index, docs, 4); err != nil {
			return nil, err
		}
		res.Docs += len(docs)
		if _, err := c.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
			return nil, err
		}
		files, size, err := segmentFiles(shardDir)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "loaded %d docs: shard %.1f MB in %d files\n", res.Docs, float64(size)/1e6, len(files))
		if size >= int64(o.SizeMB)<<20 {
			break
		}
	}
	if err := settle(ctx, shardDir); err != nil {
		return nil, err
	}
	files, size, err := segmentFiles(shardDir)
	if err != nil {
		return nil, err
	}
	res.ShardMB, res.ShardFiles = float64(size)/1e6, len(files)
	res.LoadBefore = loadavg()
	fmt.Fprintf(o.Log, "shard on %s: %.1f MB in %d files; replica recovers on %s, unthrottled; load average %s\n",
		primary, res.ShardMB, res.ShardFiles, replica, res.LoadBefore)
	tg := &target{c: c, logPath: filepath.Join(dir, replica+".log"), replicaDir: replicaDir,
		primary: cl.Node(primary), replica: cl.Node(replica)}
	// A warm-up recovery, not counted, gives the first copy its files:
	// the plain copy copies what the last recovery fetched, from where
	// the recovery wrote it (set aside once the replica is removed). The
	// primary's own directory would not do: it also holds files of
	// segments merged away and not yet deleted, which no recovery copies.
	var warm Round
	recovered, err := tg.recoverReplica(ctx, filepath.Join(dir, "recovered-0"), &warm)
	if err != nil {
		return nil, fmt.Errorf("warm-up recovery: %w", err)
	}
	for i := range o.Rounds {
		r := Round{Round: i + 1, CopyFirst: i%2 == 1}
		steps := []func() error{
			func() error { return plainCopy(recovered, filepath.Join(dir, "copy"), &r) },
			func() error {
				prev := recovered
				// What the recovery reads: the primary's files of the
				// names the last recovery fetched.
				if err := preload(recovered, shardDir); err != nil {
					return err
				}
				next, err := tg.recoverReplica(ctx, filepath.Join(dir, fmt.Sprint("recovered-", r.Round)), &r)
				if err == nil {
					recovered, err = next, os.RemoveAll(prev)
				}
				return err
			},
		}
		if !r.CopyFirst {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, fmt.Errorf("round %d: %w", r.Round, err)
			}
		}
		fmt.Fprintf(o.Log, "round %d: copy %.1f MB in %.3f s = %.0f MB/s; recovery %.1f MB (%d files) in %.3f s = %.0f MB/s, its files in %.3f s = %.0f MB/s; CPU s/GB primary %.2f, replica %.2f, plain copy %.2f\n",
			r.Round, r.CopyMB, r.CopySeconds, r.CopyMBPerS, r.RecoveryMB, r.RecoveryFiles, r.RecoverySeconds, r.RecoveryMBPerS, r.FilesSeconds, r.FilesMBPerS,
			r.PrimaryCPUPerGB, r.ReplicaCPUPerGB, r.CopyCPUPerGB)
		res.Rounds = append(res.Rounds, r)
	}
	res.LoadAfter = loadavg()
	res.CopyMBPerS = median(res.Rounds, func(r Round) float64 { return r.CopyMBPerS })
	res.RecoveryMBPerS = median(res.Rounds, func(r Round) float64 { return r.RecoveryMBPerS })
	res.FilesMBPerS = median(res.Rounds, func(r Round) float64 { return r.FilesMBPerS })
	res.Ratio = median(res.Rounds, func(r Round) float64 { return r.RecoveryMBPerS / r.CopyMBPerS })
	res.FilesRatio = median(res.Rounds, func(r Round) float64 { return r.FilesMBPerS / r.CopyMBPerS })
	res.PrimaryCPUPerGB = median(res.Rounds, func(r Round) float64 { return r.PrimaryCPUPerGB })
	res.ReplicaCPUPerGB = median(res.Rounds, func(r Round) float64 { return r.ReplicaCPUPerGB })
	res.CopyCPUPerGB = median(res.Rounds, func(r Round) float64 { return r.CopyCPUPerGB })
	fmt.Fprintf(o.Log, "median: copy %.0f MB/s; recovery's files %.0f MB/s; rounds' ratio %.2f (target >= %.2f); whole recovery %.0f MB/s: rounds' ratio %.2f; CPU s/GB primary %.2f, replica %.2f, plain copy %.2f; load average %s\n",
		res.CopyMBPerS, res.FilesMBPerS, res.FilesRatio, Target, res.RecoveryMBPerS, res.Ratio, res.PrimaryCPUPerGB, res.ReplicaCPUPerGB, res.CopyCPUPerGB, res.LoadAfter)
	if o.ProfileSeconds > 0 {
		for _, kind := range []string{"profile", "trace"} {
			n, err := profile(ctx, tg, metrics, kind, o, filepath.Join(dir, "profiled"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kind, err)
			}
			fmt.Fprintf(o.Log, "%s of both nodes over %d recoveries: %s\n", kind, n, o.Out)
		}
	}
	return res, write(o.Out, res)
}

// profile records kind ("profile", "trace") on every node (the Go
// profiler on metrics) over o.ProfileSeconds of recoveries run back to
// back, into o.Out as <kind>-node-<i>.pprof; it returns how many
// recoveries ran.
func profile(ctx context.Context, tg *target, metrics []string, kind string, o Options, aside string) (int, error) {
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return 0, err
	}
	done := make(chan error, len(metrics))
	for i, addr := range metrics {
		go func() {
			done <- proccluster.FetchProfile(ctx, addr, kind, o.ProfileSeconds, filepath.Join(o.Out, fmt.Sprintf("%s-node-%d.pprof", kind, i)))
		}()
	}
	var errs []error
	n := 0
	for waiting := len(metrics); waiting > 0; {
		select {
		case err := <-done:
			errs = append(errs, err)
			waiting--
			continue
		default:
		}
		var r Round
		if _, err := tg.recoverReplica(ctx, aside, &r); err != nil {
			errs = append(errs, err)
			break
		}
		n++
		if err := os.RemoveAll(aside); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return n, errors.Join(errs...)
}

// locate returns the node holding the index's primary and the index uuid
// (a shard's directory is <data dir>/<index uuid>/<shard>).
func locate(ctx context.Context, c *client.Client) (string, string, error) {
	st, err := c.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
	if err != nil {
		return "", "", err
	}
	for _, x := range st.Indices {
		if x.Name != index {
			continue
		}
		for _, sh := range x.Shards {
			if sh.Primary && sh.NodeId != "" {
				return sh.NodeId, x.Uuid, nil
			}
		}
	}
	return "", "", fmt.Errorf("index %s has no placed primary", index)
}

// segmentFiles lists the shard's segment files — what a recovery fetches:
// the files directly in the shard directory (the translog is a directory
// of its own).
func segmentFiles(shardDir string) ([]string, int64, error) {
	ents, err := os.ReadDir(shardDir)
	if err != nil {
		return nil, 0, err
	}
	var files []string
	var size int64
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // merged away since the listing
		}
		if err != nil {
			return nil, 0, err
		}
		files = append(files, e.Name())
		size += info.Size()
	}
	return files, size, nil
}

// settle waits until the shard's files — names and total size, which a
// merge writing one file grows — stop changing for 10 s (background
// merges done: a merge finishing during a round adds a checkpoint's
// fetch to it), at most 5 minutes.
func settle(ctx context.Context, shardDir string) error {
	var last []string
	var lastSize int64
	stable := time.Now()
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); {
		files, size, err := segmentFiles(shardDir)
		if err != nil {
			return err
		}
		if !slices.Equal(files, last) || size != lastSize {
			last, lastSize, stable = files, size, time.Now()
		} else if time.Since(stable) >= 10*time.Second {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return errors.New("the shard's files kept changing for 5 minutes")
}

// preload reads the files of from's segment files' names that are in dir,
// so that the page cache holds what is read next, and the timed copy or
// recovery of them reads memory as the other one does.
func preload(from, dir string) error {
	files, _, err := segmentFiles(from)
	if err != nil {
		return err
	}
	for _, name := range files {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // the replica's own commit point
		}
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// plainCopy copies the segment files of shardDir into scratch as a node
// writing them durably would — read, write, fsync each, then the
// directory — and removes them after.
func plainCopy(shardDir, scratch string, r *Round) error {
	if err := preload(shardDir, shardDir); err != nil {
		return err
	}
	files, _, err := segmentFiles(shardDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	buf := make([]byte, 1<<20)
	var n int64
	cpu0 := selfCPU()
	start := time.Now()
	for _, name := range files {
		w, err := copyFile(filepath.Join(shardDir, name), filepath.Join(scratch, name), buf)
		n += w
		if err != nil {
			return err
		}
	}
	d, err := os.Open(scratch)
	if err != nil {
		return err
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	r.CopyMB, r.CopySeconds, r.CopyMBPerS = float64(n)/1e6, secs, float64(n)/1e6/secs
	r.CopyCPUPerGB = (selfCPU() - cpu0).Seconds() / (r.CopyMB / 1e3)
	return nil
}

// selfCPU is the CPU time this process has used, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func copyFile(from, to string, buf []byte) (int64, error) {
	src, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.CopyBuffer(dst, src, buf)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// recovered matches the replica's report of a recovery (slog's text
// format).
var recovered = regexp.MustCompile(`msg="replica recovered from its primary".* files_fetched=(\d+) bytes_fetched=(\d+) .*files_took=(\S+) took=(\S+)`)

// recoverReplica adds a replica, waits for green and reads what the
// replica's node reported of its recovery (in its log at logPath); then
// links what the recovery fetched into aside (for the next plain copy)
// and removes the replica, so the next recovery fetches every file again.
// It returns aside.
func (tg *target) recoverReplica(ctx context.Context, aside string, r *Round) (string, error) {
	if err := tg.recoverOnce(ctx, r); err != nil {
		return "", err
	}
	return aside, removeReplica(ctx, tg.c, tg.replicaDir, aside)
}

// target is where recoveries happen: the replica's node, whose log is at
// logPath and the copy's directory replicaDir, and the primary's.
type target struct {
	c                   *client.Client
	logPath, replicaDir string
	primary, replica    *proccluster.Node
}

func (tg *target) recoverOnce(ctx context.Context, r *Round) error {
	c, logPath := tg.c, tg.logPath
	before, err := reports(logPath)
	if err != nil {
		return err
	}
	cpu0, err := tg.cpu()
	if err != nil {
		return err
	}
	if err := setReplicas(ctx, c, 1); err != nil {
		return err
	}
	// The replica's report, not health, says when it is done: right
	// after the settings change, health may still be green with no
	// replica in the routing.
	var after [][]string
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if after, err = reports(logPath); err != nil {
			return err
		}
		if len(after) > len(before) {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("the replica's node logged no recovery")
		}
	}
	cpu1, err := tg.cpu()
	if err != nil {
		return err
	}
	if _, err := c.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{index},
		WaitForStatus: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Timeout: durationpb.New(10 * time.Minute)}); err != nil {
		return err
	}
	m := after[len(before)]
	n, _ := strconv.Atoi(m[1])
	if n == 0 {
		return fmt.Errorf("the replica's recovery fetched no files (%s): it reused a copy's", m[0])
	}
	bytes, _ := strconv.ParseInt(m[2], 10, 64)
	files, err := time.ParseDuration(m[3])
	if err != nil {
		return fmt.Errorf("recovery report: files_took %q: %w", m[3], err)
	}
	took, err := time.ParseDuration(m[4])
	if err != nil {
		return fmt.Errorf("recovery report: took %q: %w", m[4], err)
	}
	r.RecoveryFiles, r.RecoveryMB, r.RecoverySeconds, r.FilesSeconds = n, float64(bytes)/1e6, took.Seconds(), files.Seconds()
	r.RecoveryMBPerS, r.FilesMBPerS = r.RecoveryMB/r.RecoverySeconds, r.RecoveryMB/r.FilesSeconds
	r.PrimaryCPUPerGB = (cpu1[0] - cpu0[0]).Seconds() / (r.RecoveryMB / 1e3)
	r.ReplicaCPUPerGB = (cpu1[1] - cpu0[1]).Seconds() / (r.RecoveryMB / 1e3)
	return nil
}

// cpu is the CPU time the primary's and the replica's nodes have used.
func (tg *target) cpu() ([2]time.Duration, error) {
	var t [2]time.Duration
	var err error
	if t[0], err = tg.primary.CPU(); err == nil {
		t[1], err = tg.replica.CPU()
	}
	return t, err
}

// removeReplica hard-links the segment files of the replica's copy in
// replicaDir into aside, sets 0 replicas and waits for the node to
// delete the copy's directory.
func removeReplica(ctx context.Context, c *client.Client, replicaDir, aside string) error {
	files, _, err := segmentFiles(replicaDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(aside, 0o755); err != nil {
		return err
	}
	for _, name := range files {
		if err := os.Link(filepath.Join(replicaDir, name), filepath.Join(aside, name)); err != nil {
			return err
		}
	}
	if err := setReplicas(ctx, c, 0); err != nil {
		return err
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(replicaDir); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the replica's node did not delete the removed copy")
		}
	}
}

// reports are the replica node's recovery reports so far.
func reports(logPath string) ([][]string, error) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return nil, err
	}
	return recovered.FindAllStringSubmatch(string(b), -1), nil
}

func setReplicas(ctx context.Context, c *client.Client, n int32) error {
	_, err := c.UpdateIndexSettings(ctx, &sluicev1.UpdateIndexSettingsRequest{Name: index,
		Settings: &sluicev1.IndexSettings{NumberOfReplicas: n}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"number_of_replicas"}}})
	return err
}

// loadavg is /proc/loadavg's three averages ("" where there is none).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func median(rs []Round, v func(Round) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = v(r)
	}
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func write(out string, res *Result) error {
	if out == "" {
		return nil
	}
	if err := report.WriteJSON(out, "recovery.json", res); err != nil {
		return err
	}
	return report.BarChart(filepath.Join(out, "recovery-mb-per-s.png"), "Peer recovery against a plain file copy (MB/s, medians)", "MB/s",
		report.Bar{Label: "plain copy", Value: res.CopyMBPerS}, report.Bar{Label: "recovery", Value: res.RecoveryMBPerS})
}
