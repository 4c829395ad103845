package shard

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-search/sluice/node/engine"
	"github.com/sluice-search/sluice/node/engine/translog"
)

// Acquire returns the shard's latest reader; the caller releases it. For a
// reader that later calls must find again, PinReader.
func (s *Shard) Acquire() *engine.Reader {
	if s.rep != nil {
		return s.rep.Acquire()
	}
	return s.eng.Acquire()
}

// Refresh makes every write so far visible to search; on a primary with
// replicas, on every in-sync copy too before it returns. On a replica it
// does nothing: what it shows follows its primary's refreshes.
func (s *Shard) Refresh(ctx context.Context) error {
	if s.rep != nil {
		return nil
	}
	res, err := s.eng.Refresh(ctx)
	if err != nil {
		return err
	}
	// As Elasticsearch's refresh API: what was written before it is
	// searchable on every copy that serves searches, not only here, so a
	// search after a refresh sees it whichever copy answers.
	if r := s.replicator(); r != nil && res.SeqNo >= 0 {
		if err := r.WaitVisible(ctx, res.SeqNo); err != nil {
			return fmt.Errorf("shard %v: refresh: %w", s.id, err)
		}
	}
	return nil
}

// Get reads a document by id, with its version: from the latest reader,
// or with realtime from the writes not yet refreshed too (a primary's
// only: on a replica ErrNotPrimary).
func (s *Shard) Get(ctx context.Context, id []byte, realtime bool) (doc engine.Doc, found bool, err error) {
	if s.rep != nil {
		if realtime {
			return engine.Doc{}, false, s.notPrimary()
		}
		doc, found, err := s.rep.GetDocument(id)
		if cerr := s.stillOpen(); cerr != nil {
			return engine.Doc{}, false, cerr
		}
		return doc, found, err
	}
	return s.eng.GetDocument(ctx, id, engine.GetOptions{Realtime: realtime})
}

// Commit makes every write durable in the index files (not only in the
// translog) and returns the commit point; a replica commits its installed
// checkpoint.
func (s *Shard) Commit(ctx context.Context) (*engine.SegmentInfos, error) {
	if s.rep != nil {
		return s.rep.Commit(ctx)
	}
	return s.eng.Commit(ctx, engine.CommitOptions{})
}

// AddIndexes adds the segments of another shard's reader (a segment copy
// of a reindex): see engine.AddIndexes. A primary's only. With replicas it
// returns once every in-sync copy has installed and committed them
// (Replicator.SyncSegments): they are not in the translog, so a copy
// promoted or handed the primary's role without them — or restarted
// before its next periodic commit — would lose them. An add already
// done (its marker committed) is synced again, so a rerun after a failed
// sync is safe.
func (s *Shard) AddIndexes(ctx context.Context, src *engine.Reader, opts engine.AddIndexesOptions) (engine.AddIndexesResult, error) {
	if s.rep != nil {
		return engine.AddIndexesResult{}, s.notPrimary()
	}
	r := s.replicator()
	if r == nil {
		return s.eng.AddIndexes(ctx, src, opts)
	}
	var res engine.AddIndexesResult
	err := r.SyncSegments(ctx, func(ctx context.Context) error {
		var err error
		res, err = s.eng.AddIndexes(ctx, src, opts)
		return err
	})
	return res, err
}

// Marker reports whether a commit of the shard carries marker (an
// AddIndexes that already happened), and the docs it recorded (a
// primary's; a replica reports none).
func (s *Shard) Marker(marker string) (docs int, ok bool) {
	if s.rep != nil {
		return 0, false
	}
	return s.eng.Writer().AddMarker(marker)
}

// Empty reports that no document was ever written to the shard, buffered
// or not.
func (s *Shard) Empty() bool {
	rd := s.Acquire()
	defer rd.Release()
	if s.rep != nil {
		return rd.MaxDoc() == 0 && s.rep.State().MaxSeqNo <= 0
	}
	return rd.MaxDoc() == 0 && s.eng.Writer().MaxSeqNo() == 0
}

// TranslogStats are the shard's translog counters (syncs, retained
// operations and bytes).
func (s *Shard) TranslogStats() translog.Stats {
	if s.rep != nil {
		return s.rep.TranslogStats()
	}
	return s.eng.TranslogStats()
}

// Recovery is how the shard's open recovered from its last commit and
// translog: stage, operations replayed (a replica's open replays nothing).
func (s *Shard) Recovery() engine.RecoveryProgress {
	if s.rep != nil {
		return engine.RecoveryProgress{Stage: engine.RecoveryDone}
	}
	return s.eng.Recovery().Progress()
}

// Stats are a shard's counters, as ShardStats reports them.
type Stats struct {
	NumDocs, DeletedDocs int64
	Segments             int
	SizeBytes            int64 // files of the current reader's segments
	MaxSeqNo             int64 // highest sequence number applied
	DurableSeqNo         int64 // highest committed, -1 before the first commit
}

// Stats returns the shard's counters.
func (s *Shard) Stats() Stats {
	if s.rep != nil {
		st := s.rep.Stats()
		out := Stats{NumDocs: int64(st.NumDocs), DeletedDocs: int64(st.DeletedDocs), Segments: st.Segments,
			SizeBytes: st.SegmentBytes, MaxSeqNo: st.MaxSeqNo, DurableSeqNo: -1}
		if c := s.rep.LastCommit(); c != nil {
			out.DurableSeqNo = c.SeqNo
		}
		return out
	}
	st := s.eng.Stats()
	out := Stats{NumDocs: int64(st.NumDocs), DeletedDocs: int64(st.DeletedDocs), Segments: st.Segments,
		SizeBytes: st.SegmentBytes, MaxSeqNo: st.SeqNo, DurableSeqNo: -1}
	if c := s.eng.Writer().LastCommit(); c != nil {
		out.DurableSeqNo = c.SeqNo
	}
	return out
}

// SetRefreshInterval sets the index's refresh interval (0: the default,
// negative: off); it applies at once unless refresh is paused.
func (s *Shard) SetRefreshInterval(d time.Duration) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.refreshInterval = d
	if s.refreshPauses == 0 && s.rep == nil {
		s.eng.SetRefreshInterval(effectiveInterval(d))
	}
}

// PauseRefresh turns periodic refresh off until every pause has been
// resumed (a reindex writing into the shard: refreshing mid-copy only
// makes small segments); resume restores the index's interval.
func (s *Shard) PauseRefresh() (resume func()) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.refreshPauses++
	if s.refreshPauses == 1 && s.rep == nil {
		s.eng.SetRefreshInterval(-1)
	}
	return func() {
		s.refreshMu.Lock()
		defer s.refreshMu.Unlock()
		s.refreshPauses--
		if s.refreshPauses == 0 && s.rep == nil {
			s.eng.SetRefreshInterval(effectiveInterval(s.refreshInterval))
		}
	}
}

func effectiveInterval(d time.Duration) time.Duration {
	if d == 0 {
		return engine.DefaultRefreshInterval
	}
	return d
}
