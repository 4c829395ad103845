package datapath_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/coordinator/datapath"
	"github.com/sluice-search/sluice/coordinator/datapath/datapathtest"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

func retryInfo(err error) *errdetails.RetryInfo {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri
		}
	}
	return nil
}

func badRequestField(err error) string {
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
			return br.FieldViolations[0].Field
		}
	}
	return ""
}

// TestBudgetsReleasedOnEveryPath: the coordinator's bulk and search
// budgets are back to zero after every kind of call — applied, partly
// failed, refused, too large, cancelled by the client — and a full or too
// small budget answers as documented.
func TestBudgetsReleasedOnEveryPath(t *testing.T) {
	c := datapathtest.Start(t, 2, datapath.Options{MaxInFlightBulkBytes: 8 << 20, MaxInFlightSearchBytes: 512 << 10})
	dp, cl := c.DataPath, c.Client
	const index = "budget"
	c.CreateIndex(t, index, 2, textMapping())
	ctx := context.Background()
	idle := func(t *testing.T, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for (dp.BulkBudget().Used() != 0 || dp.SearchBudget().Used() != 0) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if b, s := dp.BulkBudget().Used(), dp.SearchBudget().Used(); b != 0 || s != 0 {
			t.Fatalf("after %s: %d bulk and %d search bytes still held", what, b, s)
		}
	}
	big := strings.Repeat("x", 20<<10)
	items := func(from, to int) []*sluicev1.BulkItem {
		var out []*sluicev1.BulkItem
		for i := from; i < to; i++ {
			out = append(out, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("b%03d", i),
				Source: fmt.Appendf(nil, `{"title":"doc %d","n":%d,"tag":"%s"}`, i, i, big)})
		}
		return out
	}

	t.Run("bulk applied, and with per-item errors", func(t *testing.T) {
		resp, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: items(0, 60), Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR})
		if err != nil || resp.Errors {
			t.Fatalf("%v %v", resp, err)
		}
		idle(t, "a bulk")
		bad := append(items(60, 62), &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "bad", Source: []byte(`{"n": "x"}`)})
		if resp, err = cl.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: bad}); err != nil || !resp.Errors {
			t.Fatalf("%v %v", resp, err)
		}
		idle(t, "a bulk with a failed item")
	})
	t.Run("bulk larger than any request", func(t *testing.T) {
		_, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: items(0, 200)}) // 4 MB > 2 MB
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("%v", err)
		}
		idle(t, "an oversized bulk")
	})
	t.Run("bulk refused unread while the budget is full", func(t *testing.T) {
		hold, err := dp.BulkBudget().Reserve(ctx, 8<<20, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: items(0, 1)})
		hold.Release()
		if status.Code(err) != codes.ResourceExhausted || retryInfo(err) == nil || !strings.Contains(err.Error(), "coordinator") {
			t.Fatalf("full budget: %v (retry %v)", err, retryInfo(err))
		}
		idle(t, "a refused bulk")
	})
	t.Run("bulk cancelled by the client while it waits for a node", func(t *testing.T) {
		var held []func()
		for _, n := range c.Nodes {
			release, ok := datapath.HoldBudget(dp, n.ID())
			if !ok {
				t.Fatal("node budget in use")
			}
			held = append(held, release)
		}
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := cl.Bulk(cctx, &sluicev1.BulkRequest{Index: index, Items: items(0, 10), Timeout: nil})
		cancel()
		for _, r := range held {
			r()
		}
		if err == nil {
			t.Fatal("bulk into full node budgets succeeded")
		}
		idle(t, "a cancelled bulk")
	})
	t.Run("bulk stream: done, and broken off", func(t *testing.T) {
		s, err := cl.BulkStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for from := 0; from < 60; from += 20 {
			if err := s.Send(&sluicev1.BulkStreamRequest{Index: index, Items: items(from, from+20)}); err != nil {
				t.Fatal(err)
			}
		}
		if resp, err := s.CloseAndRecv(); err != nil || resp.Failed != 0 {
			t.Fatalf("%v %v", resp, err)
		}
		idle(t, "a stream")
		sctx, cancel := context.WithCancel(ctx)
		s, err = cl.BulkStream(sctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Send(&sluicev1.BulkStreamRequest{Index: index, Items: items(0, 20)})
		time.Sleep(50 * time.Millisecond)
		cancel()
		idle(t, "a broken stream")
	})
	t.Run("search within, and beyond, the search budget", func(t *testing.T) {
		r, err := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(20)})
		if err != nil || len(r.Hits) != 20 {
			t.Fatalf("%v %v", r, err)
		}
		idle(t, "a search")
		_, err = cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(60)}) // 1.2 MB of sources > 512 KiB
		if status.Code(err) != codes.InvalidArgument || badRequestField(err) != "size" {
			t.Fatalf("search beyond the budget: %v", err)
		}
		idle(t, "a search too large")
		if r, err = cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{index}, Size: proto.Int32(60), FetchSource: proto.Bool(false)}); err != nil || len(r.Hits) != 60 {
			t.Fatalf("without _source: %v", err)
		}
		idle(t, "a search without _source")
	})
	t.Run("scroll: done, broken off, batch too large", func(t *testing.T) {
		read := func(batch int32, stopAfter int) (int, error) {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			s, err := cl.Scroll(sctx, &sluicev1.ScrollRequest{Indices: []string{index}, BatchSize: batch})
			if err != nil {
				return 0, err
			}
			n := 0
			for {
				r, err := s.Recv()
				if errors.Is(err, io.EOF) {
					return n, nil
				}
				if err != nil {
					return n, err
				}
				if n += len(r.Docs); stopAfter > 0 && n >= stopAfter {
					return n, nil
				}
			}
		}
		if _, err := cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{index}}); err != nil {
			t.Fatal(err)
		}
		if n, err := read(10, 0); err != nil || n != 62 {
			t.Fatalf("scroll: %d %v", n, err)
		}
		idle(t, "a scroll")
		if _, err := read(10, 10); err != nil {
			t.Fatal(err)
		}
		idle(t, "a broken scroll")
		_, err := read(1000, 0)
		if status.Code(err) != codes.InvalidArgument || badRequestField(err) != "batch_size" {
			t.Fatalf("batch beyond the budget: %v", err)
		}
		idle(t, "a scroll batch too large")
	})
}
