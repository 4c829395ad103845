package datapath

import (
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Limits of the data path's requests, Elasticsearch's where it has them.
const (
	// MaxResultWindow bounds from + size of a search, and a scroll batch
	// (index.max_result_window).
	MaxResultWindow = 10_000
	// MaxSlices bounds a sliced scroll's max (index.max_slices_per_scroll).
	MaxSlices = 1024
	// MaxIDBytes bounds a document id (Elasticsearch's _id limit) and a
	// routing value, which is stored with the document beside its id.
	MaxIDBytes = 512
	// DefaultTrackTotalHits counts hits exactly up to this many when a
	// search does not say.
	DefaultTrackTotalHits = 10_000
)

// invalidField is an ErrInvalid about a request field, named in the
// message and by the error (rpc.FieldError).
func invalidField(field, format string, args ...any) error {
	return &fieldError{field: field, err: fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))}
}

// checkTimeout refuses a negative duration.
func checkTimeout(field string, d *durationpb.Duration) error {
	if d == nil {
		return nil
	}
	if err := d.CheckValid(); err != nil {
		return invalidField(field, "%v", err)
	}
	if d.AsDuration() < 0 {
		return invalidField(field, "must not be negative, got %v", d.AsDuration())
	}
	return nil
}

// checkID checks a document id or routing value.
func checkID(field, id string) error {
	if len(id) > MaxIDBytes {
		return invalidField(field, "is %d bytes long, more than %d", len(id), MaxIDBytes)
	}
	return nil
}

// checkSearch checks a search request's numeric options and paging.
func checkSearch(req *sluicev1.SearchRequest, size, from int) error {
	switch {
	case size < 0:
		return invalidField("size", "must be >= 0, got %d", size)
	case from < 0:
		return invalidField("from", "must be >= 0, got %d", from)
	case from+size > MaxResultWindow:
		return invalidField("size", "from + size must be <= %d, got %d; page with search_after and a point-in-time", MaxResultWindow, from+size)
	case req.GetTrackTotalHits() < -1:
		return invalidField("track_total_hits", "must be -1 (count all), 0 (the default, %d) or a positive bound, got %d", DefaultTrackTotalHits, req.GetTrackTotalHits())
	case len(req.GetSearchAfter().GetValues()) > 0 && len(req.GetSort()) == 0:
		return invalidField("search_after", "needs sort")
	case len(req.GetSearchAfter().GetValues()) > 0 && len(req.GetSearchAfter().GetValues()) != len(req.GetSort()):
		return invalidField("search_after", "has %d values for %d sort keys", len(req.GetSearchAfter().GetValues()), len(req.GetSort()))
	}
	for i, v := range req.GetSearchAfter().GetValues() {
		if d, ok := v.GetKind().(*sluicev1.SortValue_DoubleValue); ok && math.IsNaN(d.DoubleValue) {
			return invalidField(fmt.Sprintf("search_after[%d]", i), "is NaN")
		}
	}
	if err := checkTimeout("timeout", req.GetTimeout()); err != nil {
		return err
	}
	if err := checkKeepAlive("pit.keep_alive", req.GetPit().GetKeepAlive()); err != nil {
		return err
	}
	return checkID("routing", req.GetRouting())
}

// checkScroll checks a scroll request's numeric options.
func checkScroll(req *sluicev1.ScrollRequest) error {
	switch b := req.GetBatchSize(); {
	case b < 0:
		return invalidField("batch_size", "must be >= 0 (0: the default, 1,000), got %d", b)
	case b > MaxResultWindow:
		return invalidField("batch_size", "must be <= %d, got %d", MaxResultWindow, b)
	}
	if err := checkSlice(req.GetSlice()); err != nil {
		return err
	}
	return checkKeepAlive("pit.keep_alive", req.GetPit().GetKeepAlive())
}

// checkSlice checks a scroll slice (nil: none).
func checkSlice(sl *sluicev1.Slice) error {
	if sl == nil {
		return nil
	}
	switch id, max := sl.GetId(), sl.GetMax(); {
	case max < 1 || max > MaxSlices:
		return invalidField("slice.max", "must be between 1 and %d, got %d", MaxSlices, max)
	case id < 0 || id >= max:
		return invalidField("slice.id", "must be in [0, max %d), got %d", max, id)
	}
	return nil
}

// checkKeepAlive refuses a point-in-time keep-alive that is negative or
// above MaxKeepAlive, naming field.
func checkKeepAlive(field string, d *durationpb.Duration) error {
	if err := checkTimeout(field, d); err != nil {
		return err
	}
	if ka := d.AsDuration(); ka > MaxKeepAlive {
		return invalidField(field, "%v is above the maximum %v; close the point-in-time and open a new one instead", ka, MaxKeepAlive)
	}
	return nil
}

// MaxKeepAlive bounds a point-in-time's keep-alive (Elasticsearch's
// search.max_keep_alive default): a forgotten context pins segment files on
// every shard for as long as it lives.
const MaxKeepAlive = 24 * time.Hour

// MaxRetryOnConflict bounds an UPDATE item's retry_on_conflict.
const MaxRetryOnConflict = 100

// checkConcurrency validates an item's if_seq_no, if_primary_term and
// retry_on_conflict (Elasticsearch's rules: both or neither, not on a
// create, on an item with an id, not retried).
func checkConcurrency(it *sluicev1.BulkItem) error {
	if it.IfSeqNo != nil || it.IfPrimaryTerm != nil {
		switch {
		case it.IfSeqNo == nil:
			return invalidField("if_seq_no", "is required with if_primary_term")
		case it.IfPrimaryTerm == nil:
			return invalidField("if_primary_term", "is required with if_seq_no")
		case it.GetIfSeqNo() < 0:
			return invalidField("if_seq_no", "must be at least 0, got %d", it.GetIfSeqNo())
		case it.GetIfPrimaryTerm() < 1:
			return invalidField("if_primary_term", "must be at least 1, got %d", it.GetIfPrimaryTerm())
		case it.GetAction() == sluicev1.BulkAction_BULK_ACTION_CREATE:
			return invalidField("if_seq_no", "a CREATE item cannot be conditional; use INDEX")
		case it.GetId() == "":
			return invalidField("if_seq_no", "needs the item's id")
		}
	}
	if n := it.GetRetryOnConflict(); n != 0 {
		switch {
		case it.GetAction() != sluicev1.BulkAction_BULK_ACTION_UPDATE:
			return invalidField("retry_on_conflict", "is for UPDATE items, not %v", it.GetAction())
		case n < 0 || n > MaxRetryOnConflict:
			return invalidField("retry_on_conflict", "must be between 0 and %d, got %d", MaxRetryOnConflict, n)
		case it.IfSeqNo != nil:
			// Elasticsearch's rule: a retry would re-read the document and
			// write over a version the caller never saw.
			return invalidField("retry_on_conflict", "compare and write operations (if_seq_no) can not be retried")
		}
	}
	return nil
}
