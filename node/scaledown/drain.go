package scaledown

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sluice-search/sluice/cluster/metadata"
	"github.com/sluice-search/sluice/cluster/state"
)

// MarkerFile, in a data node's data directory, says that the node's drain
// was made by a scale-down (PreStop) and is to be ended when the node
// stops or starts again (ClearDrain).
const MarkerFile = "scale-down-drain"

// Defaults of Config.
const (
	DefaultPoll        = time.Second
	DefaultRecheck     = 5 * time.Second
	DefaultDecideLimit = 10 * time.Second
	// progressEvery: how often the wait logs the copies left when their
	// number has not changed.
	progressEvery = 30 * time.Second
)

// Config is what PreStop needs.
type Config struct {
	Kube kubernetes.Interface
	Pod  Pod
	// NodeID is the data node's id (the chart's is the pod name).
	NodeID string
	// Connect opens the cluster state in etcd; it is called only for a
	// pod that is leaving, so a restart needs neither etcd nor its TLS.
	Connect func() (*state.Store, error)
	// DataDir is the node's data directory, where the marker goes.
	DataDir string
	// Timeout bounds the wait for the node to be empty.
	Timeout time.Duration
	// Poll is how often the cluster state is read; Recheck how often the
	// StatefulSet is read again (a scale-up ends the drain);
	// DecideLimit bounds each read of the StatefulSet.
	Poll, Recheck, DecideLimit time.Duration
	Logger                     *slog.Logger

	store *state.Store
}

// Result is what PreStop did.
type Result struct {
	Decision Decision
	// Drained: the node was drained (Decision.Leaving).
	Drained bool
	// Left is the number of copies the node still held when PreStop
	// returned: 0 once it is empty.
	Left int
	// ScaledBack: while the node drained the pod stopped leaving alone
	// (the StatefulSet was scaled back up, or is deleted or scaled to 0:
	// Decide); the drain was ended.
	ScaledBack bool
}

// PreStop decides whether the pod is leaving; if not, it returns at once.
// If so it drains the node and waits until the node holds no copy, until
// Timeout, or until the StatefulSet is scaled back up (then it ends the
// drain: the pod restarts). An error reading the StatefulSet is logged and
// taken as a restart, so a shutdown never waits on the Kubernetes API.
func PreStop(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	log := cfg.Logger.With("node", cfg.NodeID, "pod", cfg.Pod.Name)
	var res Result
	var err error
	if res.Decision, err = cfg.decide(ctx); errors.Is(err, ErrInvalid) {
		return res, err
	} else if err != nil {
		log.Warn("scale-down check: cannot read the StatefulSet; taking this stop as a restart, the node is not drained", "err", err)
		return res, nil
	}
	if !res.Decision.Leaving {
		log.Info("scale-down check: not leaving, not draining", "why", res.Decision.Reason)
		return res, nil
	}
	log.Info("scale-down check: leaving; draining the node before it stops", "why", res.Decision.Reason, "timeout", cfg.Timeout)
	if err := writeMarker(cfg.DataDir, cfg.NodeID); err != nil {
		// The drain goes ahead: copies moved off are worth more than a
		// drain mark a later pod may have to end by hand.
		log.Warn("scale-down: cannot write the marker that ends this drain when the node stops; if the node stops without ending it, end it with `sluice node drain --undo`", "err", err)
	}
	if cfg.store, err = cfg.Connect(); err != nil {
		return res, err
	}
	resp, err := metadata.New(cfg.store).DrainNode(ctx, cfg.NodeID, false)
	if err != nil {
		return res, fmt.Errorf("drain node %s: %w", cfg.NodeID, err)
	}
	res.Drained, res.Left = true, int(resp.GetCopies())
	log.Info("scale-down: node drained; waiting for its copies to move", "copies", res.Left)
	return cfg.wait(ctx, log, res)
}

// wait polls the cluster state until the node is empty, the timeout
// passes, or the pod is no longer leaving.
func (cfg *Config) wait(ctx context.Context, log *slog.Logger, res Result) (Result, error) {
	start := time.Now()
	deadline := start.Add(cfg.Timeout)
	lastLog, lastCheck := start, start
	for {
		st, err := cfg.store.Load(ctx)
		if err != nil {
			log.Warn("scale-down: reading the cluster state", "err", err)
		} else {
			n := st.CopiesOn(cfg.NodeID)
			if n == 0 {
				res.Left = 0
				log.Info("scale-down: the node holds no shard copies; it may stop", "took", time.Since(start).Round(time.Millisecond))
				return res, nil
			}
			if n != res.Left || time.Since(lastLog) >= progressEvery {
				log.Info("scale-down: copies left on the node", "copies", n, "waiting", time.Since(start).Round(time.Second), "moves", moveNotes(st, cfg.NodeID, 3))
				res.Left, lastLog = n, time.Now()
			}
		}
		if time.Now().After(deadline) {
			log.Warn("scale-down: the node still holds copies at the drain timeout; stopping anyway (SIGTERM hands its primaries off, its other copies are placed elsewhere once it has left)",
				"copies", res.Left, "timeout", cfg.Timeout)
			return res, nil
		}
		if time.Since(lastCheck) >= cfg.Recheck {
			lastCheck = time.Now()
			if d, err := cfg.decide(ctx); err == nil && !d.Leaving {
				res.ScaledBack = true
				log.Info("scale-down: the pod is no longer removed alone; ending the drain", "why", d.Reason)
				return res, endDrain(ctx, cfg.store, cfg.DataDir, cfg.NodeID)
			}
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(cfg.Poll):
		}
	}
}

func (cfg *Config) defaults() {
	if cfg.NodeID == "" {
		cfg.NodeID = cfg.Pod.Name
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = DefaultRecheck
	}
	if cfg.DecideLimit <= 0 {
		cfg.DecideLimit = DefaultDecideLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
}

func (cfg *Config) decide(ctx context.Context) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.DecideLimit)
	defer cancel()
	return Decide(ctx, cfg.Kube, cfg.Pod)
}

// moveNotes returns up to limit "index/shard: move" notes of the copies on
// node, sorted, for the log.
func moveNotes(st *state.Snapshot, node string, limit int) []string {
	var out []string
	for _, x := range st.ByUUID {
		for n, sh := range x.Shards {
			if sh == nil {
				continue
			}
			if c := state.CopyOnNode(sh.Routing, node); c != nil {
				out = append(out, fmt.Sprintf("%s/%d: %s", x.Name(), n, c.GetMove()))
			}
		}
	}
	slices.Sort(out)
	return out[:min(len(out), limit)]
}

// writeMarker records in dir that the node's drain is a scale-down's.
func writeMarker(dir, node string) error {
	if dir == "" {
		return errors.New("no data dir")
	}
	b := fmt.Appendf(nil, "node %s drained by the scale-down preStop hook at %s\n", node, time.Now().UTC().Format(time.RFC3339))
	return os.WriteFile(filepath.Join(dir, MarkerFile), b, 0o644)
}

// HasMarker reports whether dir holds the marker of a scale-down's drain.
func HasMarker(dir string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, MarkerFile))
	return err == nil
}

// ClearDrain ends the node's drain if dir holds the marker of a
// scale-down's drain, then removes the marker; it reports whether it did.
// `sluice node` calls it when the node has stopped (deregistered: nothing
// is placed on it meanwhile) and when it starts, so a pod that a scale-up
// brings back under the same id takes copies again. A drain made by hand
// has no marker and is left alone.
func ClearDrain(ctx context.Context, store *state.Store, dir, node string) (bool, error) {
	if !HasMarker(dir) {
		return false, nil
	}
	err := endDrain(ctx, store, dir, node)
	return err == nil, err
}

// endDrain ends the node's drain, then removes the marker (if any).
func endDrain(ctx context.Context, store *state.Store, dir, node string) error {
	if _, err := metadata.New(store).DrainNode(ctx, node, true); err != nil {
		return fmt.Errorf("end the scale-down drain of node %s: %w", node, err)
	}
	if dir == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, MarkerFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("drain of node %s ended; removing %s: %w", node, MarkerFile, err)
	}
	return nil
}
