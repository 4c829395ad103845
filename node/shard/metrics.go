package shard

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-search/sluice/node/engine"
)

// Collector exposes every open shard's engine and translog statistics to
// Prometheus, labelled by index name and shard number; it reads Stats at
// scrape time, so it costs nothing between scrapes. Primary copies report
// the sluice_shard_* series; replica copies report sluice_replica_* (the
// same where they make sense — documents, segments, translog — plus how
// far the copy is behind: operations received but not yet searchable, and
// its checkpoint installs and file copies), so sums over sluice_shard_*
// keep counting each shard once.
func (h *Host) Collector() prometheus.Collector {
	return Collector(func() []*Host { return []*Host{h} })
}

// Collector is Host.Collector over the hosts that hosts returns at each
// scrape: `sluice dev` runs several data nodes in one process and serves
// them on one endpoint. A shard open on two of them at once (moving between
// in-process nodes) is reported once, as the series must be unique.
func Collector(hosts func() []*Host) prometheus.Collector { return hostCollector{hosts} }

type hostCollector struct{ hosts func() []*Host }

var (
	labels       = []string{"index", "shard"}
	descDocs     = prometheus.NewDesc("sluice_shard_docs", "Live documents as of the last refresh.", labels, nil)
	descDeleted  = prometheus.NewDesc("sluice_shard_deleted_docs", "Deleted documents not yet merged away.", labels, nil)
	descSegments = prometheus.NewDesc("sluice_shard_segments", "Segments in the current reader.", labels, nil)
	descSegBytes = prometheus.NewDesc("sluice_shard_segment_bytes", "Bytes of the current reader's segment files.", labels, nil)
	descRAM      = prometheus.NewDesc("sluice_shard_indexing_buffer_bytes", "Bytes of buffered, not yet flushed documents.", labels, nil)
	descRefresh  = prometheus.NewDesc("sluice_shard_refreshes_total", "Refreshes.", labels, nil)
	descRefreshS = prometheus.NewDesc("sluice_shard_refresh_seconds_total", "Time spent refreshing.", labels, nil)
	descRefresh9 = prometheus.NewDesc("sluice_shard_refresh_p99_seconds", "p99 latency of the recent refreshes.", labels, nil)
	descFlushes  = prometheus.NewDesc("sluice_shard_flushes_total", "In-memory segments flushed.", labels, nil)
	descFlushBW  = prometheus.NewDesc("sluice_shard_flush_budget_wait_seconds_total", "Time periodic refresh flushes waited for the process's CPU budget (shared with small merges).", labels, nil)
	descMergeSA  = prometheus.NewDesc("sluice_shard_merge_step_aside_seconds_total", "Time small merges slept at checkpoints while other goroutines waited for a CPU.", labels, nil)
	descFlushS   = prometheus.NewDesc("sluice_shard_flush_seconds_total", "Time spent flushing in-memory segments.", labels, nil)
	descFlushB   = prometheus.NewDesc("sluice_shard_flushed_bytes_total", "Indexing buffer bytes flushed.", labels, nil)
	descMerges   = prometheus.NewDesc("sluice_shard_merges_total", "Merges completed.", labels, nil)
	descMergeF   = prometheus.NewDesc("sluice_shard_merges_failed_total", "Merges that failed or were aborted.", labels, nil)
	descMergeS   = prometheus.NewDesc("sluice_shard_merge_seconds_total", "Time spent in completed merges.", labels, nil)
	descStalls   = prometheus.NewDesc("sluice_shard_indexing_stalls_total", "Times indexing stalled for flushing to catch up.", labels, nil)
	descStallS   = prometheus.NewDesc("sluice_shard_indexing_stall_seconds_total", "Time indexing stalled for flushing to catch up.", labels, nil)
	descSeqNo    = prometheus.NewDesc("sluice_shard_max_seq_no", "Highest sequence number assigned.", labels, nil)
	descTlogOps  = prometheus.NewDesc("sluice_shard_translog_uncommitted_ops", "Translog operations not yet covered by a commit.", labels, nil)
	descTlogB    = prometheus.NewDesc("sluice_shard_translog_bytes", "Bytes of retained translog.", labels, nil)
	descFsyncs   = prometheus.NewDesc("sluice_shard_translog_fsyncs_total", "Translog fsyncs.", labels, nil)
	descScrubB   = prometheus.NewDesc("sluice_shard_scrubbed_bytes_total", "Bytes of index files checksummed by the background scrubber and on-demand verification.", labels, nil)
	descScrubF   = prometheus.NewDesc("sluice_shard_scrubbed_files_total", "Index files checksummed by the background scrubber and on-demand verification.", labels, nil)
	descCorrupt  = prometheus.NewDesc("sluice_shard_corrupt_files_total", "Damaged index files found while the shard was open (scrub, verification, merges); the first fails the shard.", labels, nil)
	descScrubAt  = prometheus.NewDesc("sluice_shard_scrub_pass_completed_timestamp_seconds", "When a scrub pass last checked every file of the shard (0: not yet).", labels, nil)

	descRDocs     = prometheus.NewDesc("sluice_replica_docs", "Live documents in the replica copy's installed checkpoint.", labels, nil)
	descRDeleted  = prometheus.NewDesc("sluice_replica_deleted_docs", "Deleted documents in the replica copy's installed checkpoint.", labels, nil)
	descRSegments = prometheus.NewDesc("sluice_replica_segments", "Segments in the replica copy's installed checkpoint.", labels, nil)
	descRSegBytes = prometheus.NewDesc("sluice_replica_segment_bytes", "Bytes of the replica copy's installed segment files.", labels, nil)
	descRSeqNo    = prometheus.NewDesc("sluice_replica_max_seq_no", "Highest sequence number the replica copy received.", labels, nil)
	descRLocalCP  = prometheus.NewDesc("sluice_replica_local_checkpoint", "The replica copy holds every operation up to this sequence number.", labels, nil)
	descRVisible  = prometheus.NewDesc("sluice_replica_visible_seq_no", "Sequence number the replica copy's searches see (its installed checkpoint).", labels, nil)
	descRLagOps   = prometheus.NewDesc("sluice_replica_visibility_lag_ops", "Operations the replica copy holds but does not show to searches yet (max_seq_no - visible_seq_no).", labels, nil)
	descRInstalls = prometheus.NewDesc("sluice_replica_checkpoint_installs_total", "Primary checkpoints installed (new readers opened).", labels, nil)
	descRFetchF   = prometheus.NewDesc("sluice_replica_fetched_files_total", "Segment files copied from the primary (checkpoints, recoveries, merge pre-copies).", labels, nil)
	descRFetchB   = prometheus.NewDesc("sluice_replica_fetched_bytes_total", "Bytes of segment files copied from the primary.", labels, nil)
	descRReused   = prometheus.NewDesc("sluice_replica_reused_files_total", "Segment files a checkpoint or recovery named that the copy already had.", labels, nil)
	descRTlogB    = prometheus.NewDesc("sluice_replica_translog_bytes", "Bytes of the replica copy's retained translog.", labels, nil)
	descRTlogOps  = prometheus.NewDesc("sluice_replica_translog_uncommitted_ops", "Translog operations of the replica copy not yet covered by a commit.", labels, nil)
	descRFsyncs   = prometheus.NewDesc("sluice_replica_translog_fsyncs_total", "Translog fsyncs of the replica copy.", labels, nil)
	descRScrubB   = prometheus.NewDesc("sluice_replica_scrubbed_bytes_total", "Bytes of the replica copy's files checksummed on its disk by the background scrubber and on-demand verification.", labels, nil)
	descRScrubF   = prometheus.NewDesc("sluice_replica_scrubbed_files_total", "Files of the replica copy checksummed on its disk by the background scrubber and on-demand verification.", labels, nil)
	descRCorrupt  = prometheus.NewDesc("sluice_replica_corrupt_files_total", "Damaged files found in the replica copy while open; the first fails it (out of the in-sync set, recovered again from the primary).", labels, nil)
	descRScrubAt  = prometheus.NewDesc("sluice_replica_scrub_pass_completed_timestamp_seconds", "When a scrub pass last checked every file of the replica copy (0: not yet).", labels, nil)
)

var replicaDescs = []*prometheus.Desc{descRDocs, descRDeleted, descRSegments, descRSegBytes, descRSeqNo, descRLocalCP,
	descRVisible, descRLagOps, descRInstalls, descRFetchF, descRFetchB, descRReused, descRTlogB, descRTlogOps, descRFsyncs,
	descRScrubB, descRScrubF, descRCorrupt, descRScrubAt}

func (c hostCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDocs, descDeleted, descSegments, descSegBytes, descRAM, descRefresh,
		descRefreshS, descRefresh9, descFlushes, descFlushS, descFlushB, descFlushBW, descMerges, descMergeF, descMergeS, descMergeSA,
		descStalls, descStallS, descSeqNo, descTlogOps, descTlogB, descFsyncs, descScrubB, descScrubF, descCorrupt, descScrubAt} {
		ch <- d
	}
	for _, d := range replicaDescs {
		ch <- d
	}
}

func (c hostCollector) Collect(ch chan<- prometheus.Metric) {
	// Keyed by role too: sluice dev's in-process nodes hold a shard's
	// primary and its replica behind one endpoint.
	seen := map[[3]string]bool{}
	for _, h := range c.hosts() {
		for _, s := range h.Shards() {
			lv := []string{s.Index(), strconv.Itoa(s.ID().Shard)}
			key := [3]string{lv[0], lv[1], strconv.FormatBool(s.rep != nil)}
			if seen[key] {
				continue
			}
			seen[key] = true
			if s.rep != nil {
				collectReplica(ch, s, lv)
			} else {
				collectShard(ch, s, lv)
			}
		}
	}
}

// emitters return functions sending a gauge and a counter labelled lv.
func emitters(ch chan<- prometheus.Metric, lv []string) (gauge, counter func(*prometheus.Desc, float64)) {
	return func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
		}, func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
		}
}

// collectReplica reports a replica copy: it indexes, flushes and merges
// nothing (the primary's counters say that), so what it has installed,
// how far behind it is and what it copied.
func collectReplica(ch chan<- prometheus.Metric, s *Shard, lv []string) {
	st := s.rep.Stats()
	gauge, counter := emitters(ch, lv)
	gauge(descRDocs, float64(st.NumDocs))
	gauge(descRDeleted, float64(st.DeletedDocs))
	gauge(descRSegments, float64(st.Segments))
	gauge(descRSegBytes, float64(st.SegmentBytes))
	gauge(descRSeqNo, float64(st.MaxSeqNo))
	gauge(descRLocalCP, float64(st.LocalCheckpoint))
	gauge(descRVisible, float64(st.Visible))
	gauge(descRLagOps, float64(max(0, st.MaxSeqNo-st.Visible)))
	counter(descRInstalls, float64(st.Installs))
	counter(descRFetchF, float64(st.FilesFetched))
	counter(descRFetchB, float64(st.BytesFetched))
	counter(descRReused, float64(st.FilesReused))
	gauge(descRTlogB, float64(st.Translog.SizeBytes))
	gauge(descRTlogOps, float64(st.Translog.UncommittedOps))
	counter(descRFsyncs, float64(st.Translog.Fsyncs))
	collectChecks(ch, lv, st.CheckStats, descRScrubB, descRScrubF, descRCorrupt, descRScrubAt)
}

// collectChecks reports a copy's verification counters under the four
// descriptors given (a primary's or a replica's).
func collectChecks(ch chan<- prometheus.Metric, lv []string, st engine.CheckStats, bytes, files, corrupt, at *prometheus.Desc) {
	gauge, counter := emitters(ch, lv)
	counter(bytes, float64(st.VerifiedBytes))
	counter(files, float64(st.VerifiedFiles))
	counter(corrupt, float64(st.CorruptFiles))
	var ts float64
	if !st.ScrubbedAt.IsZero() {
		ts = float64(st.ScrubbedAt.UnixNano()) / 1e9
	}
	gauge(at, ts)
}

func collectShard(ch chan<- prometheus.Metric, s *Shard, lv []string) {
	st := s.eng.Stats()
	tl := s.eng.TranslogStats()
	gauge, counter := emitters(ch, lv)
	gauge(descDocs, float64(st.NumDocs))
	gauge(descDeleted, float64(st.DeletedDocs))
	gauge(descSegments, float64(st.Segments))
	gauge(descSegBytes, float64(st.SegmentBytes))
	gauge(descRAM, float64(st.IndexingRAMBytes))
	counter(descRefresh, float64(st.Refreshes))
	counter(descRefreshS, st.RefreshTime.Seconds())
	gauge(descRefresh9, st.RefreshP99.Seconds())
	counter(descFlushes, float64(st.Flushes))
	counter(descFlushS, st.FlushTime.Seconds())
	counter(descFlushB, float64(st.FlushedBytes))
	counter(descFlushBW, st.FlushBudgetWait.Seconds())
	counter(descMerges, float64(st.Merges))
	counter(descMergeF, float64(st.MergesFailed))
	counter(descMergeS, st.MergeTime.Seconds())
	counter(descMergeSA, st.MergeStepAside.Seconds())
	counter(descStalls, float64(st.Stalls))
	counter(descStallS, st.StallTime.Seconds())
	gauge(descSeqNo, float64(st.SeqNo))
	gauge(descTlogOps, float64(tl.UncommittedOps))
	gauge(descTlogB, float64(tl.SizeBytes))
	counter(descFsyncs, float64(tl.Fsyncs))
	collectChecks(ch, lv, st.CheckStats, descScrubB, descScrubF, descCorrupt, descScrubAt)
}
