package coordinator

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/etcdtest"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestPutMappingBoundedWithoutEtcd: with its etcd gone (the real embedded
// server stopped), a coordinator's PutMapping waits for etcd at most its
// MappingUpdateTimeout, whatever the client's deadline, and fails
// UNAVAILABLE saying why — or DEADLINE_EXCEEDED when the client's own
// deadline comes first. Before, it waited on the etcd client, which
// retries for as long as its context lasts: a call without a deadline
// hung.
func TestPutMappingBoundedWithoutEtcd(t *testing.T) {
	srv := etcdtest.Start(t)
	const bound = 500 * time.Millisecond
	c, err := New(Config{Listen: "127.0.0.1:0", Etcd: etcdtest.Client(t, srv), MappingUpdateTimeout: bound,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := client.Connect(ctx, c.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	srv.Close()

	mapping := &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT}}}
	for _, tc := range []struct {
		name     string
		deadline time.Duration // the client's; 0: none
		code     codes.Code
		says     []string
		within   time.Duration
	}{
		{name: "no client deadline", code: codes.Unavailable, within: 3 * bound,
			says: []string{"did not take the mapping update within 500ms", "retry"}},
		{name: "a client deadline past the bound", deadline: time.Minute, code: codes.Unavailable, within: 3 * bound,
			says: []string{"did not take the mapping update within 500ms"}},
		{name: "a client deadline before the bound", deadline: bound / 5, code: codes.DeadlineExceeded, within: bound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cctx := ctx
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				cctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			began := time.Now()
			_, err := cl.PutMapping(cctx, &sluicev1.PutMappingRequest{Name: "x", Mapping: mapping})
			took := time.Since(began)
			s := status.Convert(err)
			if s.Code() != tc.code || took > tc.within {
				t.Fatalf("PutMapping: %v after %v; want %v within %v", err, took, tc.code, tc.within)
			}
			for _, w := range tc.says {
				if !strings.Contains(s.Message(), w) {
					t.Errorf("message %q does not say %q", s.Message(), w)
				}
			}
		})
	}
}
