package devcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/pki"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// TestCertificateRotationUnderLoad: the cluster certificate (served by
// etcd, the coordinator and the data nodes, and presented by each as a
// client) is replaced on disk by a new one of the same CA while clients
// bulk and search, on long-lived connections and on new ones: no request
// fails, and every new connection then presents the new certificate.
func TestCertificateRotationUnderLoad(t *testing.T) {
	c := startSecure(t, t.TempDir(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	files := tlsFiles(c.TLSDir)
	// Standalone nodes on the same files: the coordinator reaches them
	// over mutual TLS.
	var nodeAddrs []string
	for _, id := range []string{"node-a", "node-b"} {
		n, err := joinNode(ctx, t, c, id, files)
		if err != nil {
			t.Fatal(err)
		}
		nodeAddrs = append(nodeAddrs, n.Addr())
	}
	caOnly := loadTLS(t, tlsconf.Files{TrustedCAFile: files.TrustedCAFile})
	dial := func() (*client.Client, error) {
		return client.Dial(ctx, c.Addr(), append(caOnly.DialOptions(), client.WithAPIKey(c.AdminKey))...)
	}
	kept := dialAdmin(ctx, t, c, c.Addr())
	if _, err := kept.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "books",
		Settings: &sluicev1.IndexSettings{NumberOfShards: 2}, WaitForActiveShards: true}); err != nil {
		t.Fatal(err)
	}
	waitGreen(t, kept)

	// The load: bulk then search on the kept connection, and a search on
	// a new connection (a new handshake) every round.
	var ops, fresh atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf("%s: %v", what, err))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				resp, err := kept.Bulk(ctx, &sluicev1.BulkRequest{Index: "books", Items: []*sluicev1.BulkItem{
					{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: id, Source: []byte(`{"title":"rotation"}`)}}})
				if err == nil && resp.Errors {
					err = fmt.Errorf("item error %v", resp.Items[0].Error)
				}
				if err != nil {
					fail("bulk "+id, err)
				}
				if _, err := kept.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"books"}}); err != nil {
					fail("search", err)
				}
				cl, err := dial()
				if err == nil {
					_, err = cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"books"}})
					cl.Close()
				}
				if err != nil {
					fail("search on a new connection", err)
				}
				ops.Add(3)
				fresh.Add(1)
			}
		}()
	}

	time.Sleep(time.Second)
	before := ops.Load()
	ca, err := pki.LoadCA(files.TrustedCAFile, filepath.Join(c.TLSDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.Subject{CommonName: "sluice-dev", Organization: []string{tlsconf.ClusterOrganization},
		Hosts: []string{"127.0.0.1", "localhost", "::1"}})
	if err != nil {
		t.Fatal(err)
	}
	// Key first, then certificate, each renamed into place: between the
	// two the files do not match, as in any rotation that is not one
	// atomic swap.
	if err := pki.WritePair(c.TLSDir, ClusterCert[:len(ClusterCert)-len(".crt")], certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	rotated, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * tlsconf.CheckInterval)
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed across the rotation, first: %s", len(failures), ops.Load(), strings.Join(failures[:min(5, len(failures))], "; "))
	}
	if after := ops.Load() - before; after < 30 || fresh.Load() < 10 {
		t.Fatalf("too little load across the rotation: %d requests after it began, %d new connections", after, fresh.Load())
	}
	t.Logf("%d requests, %d on new connections, none failed", ops.Load(), fresh.Load())

	// New connections to every server present the new certificate (the
	// nodes also require the new one as the client's).
	client := loadTLS(t, files).ClientConfig()
	servers := map[string]string{"coordinator": c.Addr(), "etcd": strings.TrimPrefix(c.EtcdEndpoints()[0], "https://")}
	for i, a := range nodeAddrs {
		servers[fmt.Sprintf("node %d", i)] = a
	}
	for name, addr := range servers {
		conn, err := tls.Dial("tcp", addr, client)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		if got.SerialNumber.Cmp(rotated.SerialNumber) != 0 {
			t.Errorf("%s presents certificate %x, want the rotated %x", name, got.SerialNumber, rotated.SerialNumber)
		}
	}
}
