package devcluster

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/node"
	nodev1 "github.com/sluice-search/sluice/proto/sluice/node/v1"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/pki"
	"github.com/sluice-search/sluice/security/tlsconf"
)

func startSecure(t *testing.T, dir string, nodes int) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Start(ctx, Config{ClusterSettings: watermark.Ignored(), DataDir: dir, Listen: "127.0.0.1:0", Nodes: nodes, LeaseTTL: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler), Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

func loadTLS(t *testing.T, f tlsconf.Files) *tlsconf.Source {
	t.Helper()
	s, err := tlsconf.Load(f, f.CertFile != "" && f.ClientCertAuth, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dialAdmin connects to addr over TLS (the cluster CA) with the admin
// key, closing the connection at the test's end.
func dialAdmin(ctx context.Context, t *testing.T, c *Cluster, addr string) *client.Client {
	t.Helper()
	caOnly := loadTLS(t, tlsconf.Files{TrustedCAFile: filepath.Join(c.TLSDir, CAFile)})
	cl, err := client.Dial(ctx, addr, append(caOnly.DialOptions(), client.WithAPIKey(c.AdminKey))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// joinNode starts a standalone data node on the cluster's etcd with the
// TLS files f (as a server and as etcd's and other nodes' client).
func joinNode(ctx context.Context, t *testing.T, c *Cluster, id string, f tlsconf.Files) (*node.Node, error) {
	t.Helper()
	internal := f
	internal.ClientCertAuth, internal.RequireOrganization = true, tlsconf.ClusterOrganization
	src := loadTLS(t, internal)
	n, err := node.New(node.Config{ID: id, DataDir: filepath.Join(t.TempDir(), id), Listen: "127.0.0.1:0",
		EtcdEndpoints: c.EtcdEndpoints(), EtcdTLS: src.ClientConfig(), LeaseTTL: 2 * time.Second,
		Logger: slog.New(slog.DiscardHandler), TLS: src})
	if err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		return nil, err
	}
	t.Cleanup(n.Stop)
	return n, nil
}

// TestSecureClusterTLS: in a secure cluster every connection is TLS; a
// standalone node holding the cluster's certificate joins and serves
// shards over mutual TLS; plaintext and certificates of another CA are
// refused by etcd, the coordinator and the nodes.
func TestSecureClusterTLS(t *testing.T) {
	dir := t.TempDir()
	c := startSecure(t, dir, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	files := tlsFiles(c.TLSDir)
	joined, err := joinNode(ctx, t, c, "joined", files)
	if err != nil {
		t.Fatalf("a node with the cluster's certificate cannot join: %v", err)
	}

	caOnly := loadTLS(t, tlsconf.Files{TrustedCAFile: files.TrustedCAFile})
	cl, err := client.Dial(ctx, c.Addr(), append(caOnly.DialOptions(), client.WithAPIKey(c.AdminKey))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Two shards, one per node: the coordinator reaches the joined node
	// over the network, with its client certificate.
	if _, err := cl.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "books",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2}, WaitForActiveShards: true}); err != nil {
		t.Fatal(err)
	}
	waitGreen(t, cl)
	st, err := cl.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	onJoined := false
	for _, sh := range st.Indices[0].Shards {
		onJoined = onJoined || sh.NodeId == joined.ID()
	}
	if !onJoined {
		t.Fatalf("no shard on the joined node: %v", st.Indices[0].Shards)
	}
	items := []*sluicev1.BulkItem{}
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: id, Source: []byte(`{"title":"x"}`)})
	}
	if resp, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "books", Items: items,
		Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR}); err != nil || resp.Errors {
		t.Fatalf("bulk: %v %v", err, resp)
	}
	res, err := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"books"}})
	if err != nil || res.GetTotal().GetValue() != 6 {
		t.Fatalf("search over TLS: %v, %v", err, res.GetTotal())
	}

	t.Run("plaintext client refused by the coordinator", func(t *testing.T) {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		if _, err := client.Connect(pctx, c.Addr()); err == nil {
			t.Fatal("a plaintext client reached the secure coordinator")
		}
	})
	t.Run("internal service refuses a user certificate of the cluster CA", func(t *testing.T) {
		user := loadTLS(t, tlsconf.Files{CertFile: filepath.Join(c.TLSDir, AdminCert), KeyFile: filepath.Join(c.TLSDir, AdminKey),
			TrustedCAFile: files.TrustedCAFile})
		callNode(t, joined.Addr(), user.DialOptions()...)
	})
	t.Run("internal service refuses a client without a certificate", func(t *testing.T) {
		callNode(t, joined.Addr(), caOnly.DialOptions()...)
	})
	t.Run("internal service refuses plaintext", func(t *testing.T) {
		callNode(t, joined.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	})

	// Another CA, with a certificate of the cluster's organization.
	otherDir := t.TempDir()
	other, err := pki.NewCA("other CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := other.Issue(pki.Subject{CommonName: "intruder", Organization: []string{tlsconf.ClusterOrganization}, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WritePair(otherDir, "intruder", cert, key); err != nil {
		t.Fatal(err)
	}
	intruder := tlsconf.Files{CertFile: filepath.Join(otherDir, "intruder.crt"), KeyFile: filepath.Join(otherDir, "intruder.key"),
		TrustedCAFile: files.TrustedCAFile}
	t.Run("node with a certificate of another CA cannot join", func(t *testing.T) {
		jctx, jcancel := context.WithTimeout(ctx, 3*time.Second)
		defer jcancel()
		if _, err := joinNode(jctx, t, c, "intruder", intruder); err == nil {
			t.Fatal("a node with another CA's certificate joined")
		}
		st, err := cl.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range st.Nodes {
			if n.Id == "intruder" {
				t.Fatal("the intruder is registered")
			}
		}
	})
	t.Run("etcd refuses a certificate of another CA", func(t *testing.T) {
		src := loadTLS(t, intruder)
		ec, err := clientv3.New(clientv3.Config{Endpoints: c.EtcdEndpoints(), TLS: src.ClientConfig(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return // refused at dial
		}
		defer ec.Close()
		gctx, gcancel := context.WithTimeout(ctx, 2*time.Second)
		defer gcancel()
		if _, err := ec.Get(gctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err == nil {
			t.Fatal("etcd answered a client of another CA")
		}
	})
	t.Run("internal service refuses a certificate of another CA", func(t *testing.T) {
		callNode(t, joined.Addr(), loadTLS(t, intruder).DialOptions()...)
	})
}

// callNode calls a data node's internal service and expects refusal.
func callNode(t *testing.T, addr string, opts ...grpc.DialOption) {
	t.Helper()
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = nodev1.NewNodeClient(cc).ShardGet(ctx, &nodev1.ShardGetRequest{})
	if code := status.Code(err); code != codes.Unavailable && code != codes.Unauthenticated && code != codes.PermissionDenied {
		t.Fatalf("internal call answered %v, want a refusal", err)
	}
}
