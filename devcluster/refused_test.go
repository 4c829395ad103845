package devcluster

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/sluice-search/sluice/client/bulkindexer"
	"github.com/sluice-search/sluice/coordinator"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/auth"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// TestBulkFailsFastWhenNodesRefuseTheCertificate: a coordinator whose
// certificate the data nodes refuse (a user's, without the cluster's
// organization) cannot reach a shard. A bulk load through it fails within
// seconds with the TLS refusal, rather than retrying it as a broken
// connection for minutes, and stops sending.
func TestBulkFailsFastWhenNodesRefuseTheCertificate(t *testing.T) {
	c := startSecure(t, t.TempDir(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	files := tlsFiles(c.TLSDir)
	if _, err := joinNode(ctx, t, c, "n1", files); err != nil {
		t.Fatal(err)
	}
	if _, err := dialAdmin(ctx, t, c, c.Addr()).CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "books",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 1}, WaitForActiveShards: true}); err != nil {
		t.Fatal(err)
	}

	user := loadTLS(t, tlsconf.Files{CertFile: filepath.Join(c.TLSDir, AdminCert), KeyFile: filepath.Join(c.TLSDir, AdminKey),
		TrustedCAFile: files.TrustedCAFile})
	ec, err := clientv3.New(clientv3.Config{Endpoints: c.EtcdEndpoints(), TLS: loadTLS(t, files).ClientConfig(),
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	wrong, err := coordinator.New(coordinator.Config{ID: "wrong-certificate", Listen: "127.0.0.1:0", Etcd: ec,
		ClusterName: "sluice-dev", TLS: user, Auth: &auth.Config{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := wrong.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer wrong.Stop()

	var reasons []string
	ix, err := bulkindexer.New(bulkindexer.Config{Client: dialAdmin(ctx, t, c, wrong.Addr()), Index: "books", BatchDocs: 10, Workers: 1,
		OnError: func(_ *sluicev1.BulkItem, r *sluicev1.BulkItemResult) {
			reasons = append(reasons, r.GetError().GetReason())
		}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 1000 && err == nil; i++ {
			err = ix.Add(ctx, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Source: []byte(`{"t":"x"}`)})
		}
		if cerr := ix.Close(ctx); err == nil {
			err = cerr
		}
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the load still retries after %s (%d retries)", time.Since(start), ix.Stats().Retries)
	}
	var refused *bulkindexer.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "tls: bad certificate") {
		t.Fatalf("load ended with %v, want the TLS refusal", err)
	}
	st := ix.Stats()
	if st.Retries != 0 || st.Created != 0 || st.Added >= 1000 {
		t.Errorf("stats %+v: want no retry, nothing created, and the load stopped early", st)
	}
	if len(reasons) == 0 || !tlsconf.RefusedMessage(reasons[0]) {
		t.Errorf("items failed with %q", reasons)
	}
	t.Logf("failed in %s: %v", time.Since(start).Round(time.Millisecond), err)
}
