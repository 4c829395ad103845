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
//     operations phase count against it). Then back to 0 replicas: the
//     node deletes the copy (the shard is fully active on the primary's
//     node), so the next round fetches every file again.
//
// Both read the same files, which the page cache may hold for both; the
// result is the medians' ratio, with the machine's load average before and
// after.
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
	Binary     string // the sluice binary to run the cluster with
	SizeMB     int    // the shard's size on disk to load to; default 256
	Rounds     int    // rounds of copy + recovery; default 3
	Docs       []corpus.Doc
	CorpusDesc string
	Out        string
	Log        io.Writer
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
	Ratio          float64 `json:"ratio"`
	Target         float64 `json:"target"`
	LoadBefore     string  `json:"loadavg_before"`
	LoadAfter      string  `json:"loadavg_after"`
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
	cl, err := proccluster.Start(ctx, proccluster.Options{Binary: o.Binary, Dir: dir, Nodes: 2,
		NodeArgs: []string{"--log-level", "info", "--recovery-max-bytes-per-sec", "-1"}})
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
	logPath := filepath.Join(dir, replica+".log")
	// A warm-up recovery, not counted, gives the first copy its files:
	// the plain copy copies what the last recovery fetched, from where
	// the recovery wrote it (set aside once the replica is removed). The
	// primary's own directory would not do: it also holds files of
	// segments merged away and not yet deleted, which no recovery copies.
	var warm Round
	recovered, err := recoverReplica(ctx, c, logPath, replicaDir, filepath.Join(dir, "recovered-0"), &warm)
	if err != nil {
		return nil, fmt.Errorf("warm-up recovery: %w", err)
	}
	for i := range o.Rounds {
		r := Round{Round: i + 1, CopyFirst: i%2 == 1}
		steps := []func() error{
			func() error { return plainCopy(recovered, filepath.Join(dir, "copy"), &r) },
			func() error {
				prev := recovered
				next, err := recoverReplica(ctx, c, logPath, replicaDir, filepath.Join(dir, fmt.Sprint("recovered-", r.Round)), &r)
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
		fmt.Fprintf(o.Log, "round %d: copy %.1f MB in %.2f s = %.0f MB/s; recovery %.1f MB (%d files) in %.2f s = %.0f MB/s\n",
			r.Round, r.CopyMB, r.CopySeconds, r.CopyMBPerS, r.RecoveryMB, r.RecoveryFiles, r.RecoverySeconds, r.RecoveryMBPerS)
		res.Rounds = append(res.Rounds, r)
	}
	res.LoadAfter = loadavg()
	res.CopyMBPerS = median(res.Rounds, func(r Round) float64 { return r.CopyMBPerS })
	res.RecoveryMBPerS = median(res.Rounds, func(r Round) float64 { return r.RecoveryMBPerS })
	res.Ratio = res.RecoveryMBPerS / res.CopyMBPerS
	fmt.Fprintf(o.Log, "median: copy %.0f MB/s, recovery %.0f MB/s: ratio %.2f (target >= %.2f); load average %s\n",
		res.CopyMBPerS, res.RecoveryMBPerS, res.Ratio, Target, res.LoadAfter)
	return res, write(o.Out, res)
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

// settle waits until the shard's files stop changing for 3 s (background
// merges done), at most 5 minutes.
func settle(ctx context.Context, shardDir string) error {
	var last []string
	stable := time.Now()
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); {
		files, _, err := segmentFiles(shardDir)
		if err != nil {
			return err
		}
		if !slices.Equal(files, last) {
			last, stable = files, time.Now()
		} else if time.Since(stable) >= 3*time.Second {
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

// plainCopy copies the segment files of shardDir into scratch as a node
// writing them durably would — read, write, fsync each, then the
// directory — and removes them after.
func plainCopy(shardDir, scratch string, r *Round) error {
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
	return nil
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
var recovered = regexp.MustCompile(`msg="replica recovered from its primary".* files_fetched=(\d+) bytes_fetched=(\d+) .*took=(\S+)`)

// recoverReplica adds a replica, waits for green and reads what the
// replica's node reported of its recovery (in its log at logPath); then
// links what the recovery fetched into aside (for the next plain copy)
// and removes the replica, so the next recovery fetches every file again.
// It returns aside.
func recoverReplica(ctx context.Context, c *client.Client, logPath, replicaDir, aside string, r *Round) (string, error) {
	if err := recoverOnce(ctx, c, logPath, r); err != nil {
		return "", err
	}
	return aside, removeReplica(ctx, c, replicaDir, aside)
}

func recoverOnce(ctx context.Context, c *client.Client, logPath string, r *Round) error {
	before, err := reports(logPath)
	if err != nil {
		return err
	}
	if err := setReplicas(ctx, c, 1); err != nil {
		return err
	}
	if _, err := c.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{index},
		WaitForStatus: sluicev1.HealthStatus_HEALTH_STATUS_GREEN, Timeout: durationpb.New(10 * time.Minute)}); err != nil {
		return err
	}
	var after [][]string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
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
	m := after[len(before)]
	n, _ := strconv.Atoi(m[1])
	bytes, _ := strconv.ParseInt(m[2], 10, 64)
	took, err := time.ParseDuration(m[3])
	if err != nil {
		return fmt.Errorf("recovery report: took %q: %w", m[3], err)
	}
	r.RecoveryFiles, r.RecoveryMB, r.RecoverySeconds = n, float64(bytes)/1e6, took.Seconds()
	r.RecoveryMBPerS = r.RecoveryMB / r.RecoverySeconds
	return nil
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
