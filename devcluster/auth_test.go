package devcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/watermark"
	"github.com/sluice-search/sluice/coordinator"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/auth"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// syncBuffer is a log sink tests read while the cluster writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type secureEnv struct {
	c     *Cluster
	ca    *tlsconf.Source
	admin *client.Client
	log   *syncBuffer
}

func newSecureEnv(t *testing.T) *secureEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := &syncBuffer{}
	c, err := Start(ctx, Config{ClusterSettings: watermark.Ignored(), DataDir: t.TempDir(), Listen: "127.0.0.1:0", Nodes: 1, LeaseTTL: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(log, nil)), Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	e := &secureEnv{c: c, log: log, ca: loadTLS(t, tlsconf.Files{TrustedCAFile: filepath.Join(c.TLSDir, CAFile)})}
	e.admin = e.client(t, c.Addr(), c.AdminKey)
	return e
}

// client connects to addr with key ("" for none).
func (e *secureEnv) client(t *testing.T, addr, key string) *client.Client {
	t.Helper()
	opts := e.ca.DialOptions()
	if key != "" {
		opts = append(opts, client.WithAPIKey(key))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// key makes a key of a new role granting privileges on names.
func (e *secureEnv) key(t *testing.T, name string, idx ...*sluicev1.IndexPrivileges) string {
	t.Helper()
	ctx := context.Background()
	auth := sluicev1.NewAuthClient(e.admin.Conn())
	if _, err := auth.PutRole(ctx, &sluicev1.PutRoleRequest{Role: &sluicev1.Role{Name: name, Indices: idx}}); err != nil {
		t.Fatal(err)
	}
	k, err := auth.CreateApiKey(ctx, &sluicev1.CreateApiKeyRequest{Name: name, Roles: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	return k.Encoded
}

func privs(names []string, ps ...sluicev1.Privilege) *sluicev1.IndexPrivileges {
	return &sluicev1.IndexPrivileges{Names: names, Privileges: ps}
}

const (
	pRead    = sluicev1.Privilege_PRIVILEGE_READ
	pWrite   = sluicev1.Privilege_PRIVILEGE_WRITE
	pMonitor = sluicev1.Privilege_PRIVILEGE_MONITOR
)

func wantCode(t *testing.T, err error, code codes.Code, text string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), text) {
		t.Fatalf("got %v, want %v containing %q", err, code, text)
	}
}

// TestSecureClusterAuth: keys and roles decide what a caller may do;
// aliases resolve before the check; a reindex needs read on the source
// and write on the destination; point-in-times belong to their creator;
// refusals and changes are audited.
func TestSecureClusterAuth(t *testing.T) {
	e := newSecureEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, name := range []string{"books", "secret", "copy"} {
		if _, err := e.admin.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: name, Settings: &sluicev1.IndexSettings{NumberOfShards: 1},
			WaitForActiveShards: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.admin.UpdateAliases(ctx, &sluicev1.UpdateAliasesRequest{Actions: []*sluicev1.AliasAction{
		{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: "library", Index: "books"},
		{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: "everything", Index: "books"},
		{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: "everything", Index: "secret"},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Bulk(ctx, &sluicev1.BulkRequest{Index: "books", Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR,
		Items: []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "1", Source: []byte(`{"t":"a"}`)}}}); err != nil {
		t.Fatal(err)
	}

	reader := e.client(t, e.c.Addr(), e.key(t, "reader", privs([]string{"books"}, pRead, pMonitor)))
	t.Run("read-only key reads, through an alias too", func(t *testing.T) {
		for _, idx := range []string{"books", "library"} {
			res, err := reader.Search(ctx, &sluicev1.SearchRequest{Indices: []string{idx}})
			if err != nil || res.GetTotal().GetValue() != 1 {
				t.Fatalf("search %s: %v %v", idx, err, res.GetTotal())
			}
		}
	})
	t.Run("read-only key cannot write or delete", func(t *testing.T) {
		_, err := reader.Bulk(ctx, &sluicev1.BulkRequest{Index: "books",
			Items: []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "2", Source: []byte(`{}`)}}})
		wantCode(t, err, codes.PermissionDenied, "[write] privilege on index [books]")
		_, err = reader.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: "books"})
		wantCode(t, err, codes.PermissionDenied, "[manage] privilege on index [books]")
		_, err = sluicev1.NewAuthClient(reader.Conn()).CreateApiKey(ctx, &sluicev1.CreateApiKeyRequest{Name: "x", Roles: []string{"admin"}})
		wantCode(t, err, codes.PermissionDenied, "[admin]")
	})
	t.Run("an alias is checked on every index it stands for", func(t *testing.T) {
		_, err := reader.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"everything"}})
		wantCode(t, err, codes.PermissionDenied, "[read] privilege on index [secret]")
		_, err = reader.Search(ctx, &sluicev1.SearchRequest{})
		wantCode(t, err, codes.PermissionDenied, "[read] privilege on index [copy]")
	})
	t.Run("lists show only what the caller may monitor", func(t *testing.T) {
		ls, err := reader.ListIndices(ctx, &sluicev1.ListIndicesRequest{})
		if err != nil || len(ls.Indices) != 1 || ls.Indices[0].Name != "books" {
			t.Fatalf("%v %v", err, ls)
		}
	})
	t.Run("reindex needs read on the source and write on the destination", func(t *testing.T) {
		req := &sluicev1.ReindexRequest{Source: &sluicev1.ReindexSource{Index: "books"}, Dest: &sluicev1.ReindexDestination{Index: "copy"}}
		_, err := reader.Reindex(ctx, req)
		wantCode(t, err, codes.PermissionDenied, "[write] privilege on index [copy]")
		writer := e.client(t, e.c.Addr(), e.key(t, "copier", privs([]string{"copy"}, pWrite)))
		_, err = writer.Reindex(ctx, req)
		wantCode(t, err, codes.PermissionDenied, "[read] privilege on index [books]")
		both := e.client(t, e.c.Addr(), e.key(t, "both", privs([]string{"books"}, pRead), privs([]string{"copy"}, pWrite)))
		if _, err := both.Reindex(ctx, req); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("update by query needs read and write on its index", func(t *testing.T) {
		req := &sluicev1.UpdateByQueryRequest{Index: "library", DocValues: []byte(`{"t":"b"}`)}
		_, err := reader.UpdateByQuery(ctx, req)
		wantCode(t, err, codes.PermissionDenied, "[write] privilege on index [books]")
		writer := e.client(t, e.c.Addr(), e.key(t, "blind-writer", privs([]string{"books"}, pWrite)))
		_, err = writer.UpdateByQuery(ctx, req)
		wantCode(t, err, codes.PermissionDenied, "[read] privilege on index [books]")
		// Allowed, it reaches the request's own checks: t is indexed, not
		// updatable in place.
		updater := e.client(t, e.c.Addr(), e.key(t, "updater", privs([]string{"books"}, pRead, pWrite)))
		_, err = updater.UpdateByQuery(ctx, req)
		wantCode(t, err, codes.InvalidArgument, "doc_values")
	})
	t.Run("cluster settings and drains need manage on all indices", func(t *testing.T) {
		_, err := reader.UpdateClusterSettings(ctx, &sluicev1.UpdateClusterSettingsRequest{Settings: &sluicev1.ClusterSettings{DiskWatermarkLow: "99%"}})
		wantCode(t, err, codes.PermissionDenied, "[manage] privilege on all indices")
		_, err = reader.DrainNode(ctx, &sluicev1.DrainNodeRequest{NodeId: "node-1"})
		wantCode(t, err, codes.PermissionDenied, "[manage] privilege on all indices")
		_, err = reader.GetClusterSettings(ctx, &sluicev1.GetClusterSettingsRequest{})
		wantCode(t, err, codes.PermissionDenied, "[monitor] privilege on all indices")
	})
	t.Run("a point-in-time belongs to its creator", func(t *testing.T) {
		pit, err := reader.OpenPointInTime(ctx, &sluicev1.OpenPointInTimeRequest{Indices: []string{"books"}, KeepAlive: durationpb.New(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := reader.Search(ctx, &sluicev1.SearchRequest{Pit: &sluicev1.PointInTime{Id: pit.Id}})
		if err != nil || res.GetTotal().GetValue() != 1 {
			t.Fatalf("creator's search: %v %v", err, res)
		}
		other := e.client(t, e.c.Addr(), e.key(t, "other", privs([]string{"*"}, pRead)))
		_, err = other.Search(ctx, &sluicev1.SearchRequest{Pit: &sluicev1.PointInTime{Id: pit.Id}})
		wantCode(t, err, codes.PermissionDenied, "another caller")
		_, err = other.ClosePointInTime(ctx, &sluicev1.ClosePointInTimeRequest{Id: pit.Id})
		wantCode(t, err, codes.PermissionDenied, "another caller")
		if _, err := reader.ClosePointInTime(ctx, &sluicev1.ClosePointInTimeRequest{Id: pit.Id}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a scroll cursor belongs to its creator", func(t *testing.T) {
		if _, err := e.admin.Bulk(ctx, &sluicev1.BulkRequest{Index: "books", Refresh: sluicev1.RefreshPolicy_REFRESH_POLICY_WAIT_FOR,
			Items: []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: "3", Source: []byte(`{"t":"c"}`)}}}); err != nil {
			t.Fatal(err)
		}
		first := func(c *client.Client, cursor []byte) (*sluicev1.ScrollResponse, error) {
			st, err := c.Scroll(ctx, &sluicev1.ScrollRequest{Indices: []string{"books"}, BatchSize: 1, Cursor: cursor})
			if err != nil {
				return nil, err
			}
			return st.Recv()
		}
		batch, err := first(reader, nil)
		if err != nil || len(batch.Docs) != 1 || len(batch.Cursor) == 0 {
			t.Fatalf("creator's scroll: %v %v", err, batch)
		}
		// Another caller, even one that may read every index, cannot
		// resume it: the cursor carries the scroll's own point-in-time.
		other := e.client(t, e.c.Addr(), e.key(t, "other-scroller", privs([]string{"*"}, pRead)))
		_, err = first(other, batch.Cursor)
		wantCode(t, err, codes.PermissionDenied, "another caller")
		_, err = first(other, batch.Cursor[16:])
		wantCode(t, err, codes.PermissionDenied, "another caller")
		next, err := first(reader, batch.Cursor)
		if err != nil || len(next.Docs) != 1 || next.Docs[0].Id == batch.Docs[0].Id {
			t.Fatalf("creator's resumed scroll: %v %v after %v", err, next, batch.Docs)
		}
	})
	t.Run("a client certificate names the caller and its roles", func(t *testing.T) {
		cert := loadTLS(t, tlsconf.Files{CertFile: filepath.Join(e.c.TLSDir, AdminCert), KeyFile: filepath.Join(e.c.TLSDir, AdminKey),
			TrustedCAFile: filepath.Join(e.c.TLSDir, CAFile)})
		cl, err := client.Dial(ctx, e.c.Addr(), cert.DialOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		who, err := sluicev1.NewAuthClient(cl.Conn()).Authenticate(ctx, &sluicev1.AuthenticateRequest{})
		if err != nil || who.Principal != "cert:admin" {
			t.Fatalf("%v %v", err, who)
		}
		if _, err := cl.ClusterState(ctx, &sluicev1.ClusterStateRequest{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("refusals and changes are audited", func(t *testing.T) {
		bad := e.client(t, e.c.Addr(), "nope:nope")
		_, err := bad.ListIndices(ctx, &sluicev1.ListIndicesRequest{})
		wantCode(t, err, codes.Unauthenticated, "invalid API key")
		if _, err := e.admin.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: "copy"}); err != nil {
			t.Fatal(err)
		}
		log := e.log.String()
		for _, want := range []string{"event=authentication_failed", "event=access_denied principal=api_key:", "event=api_key_created",
			"event=role_put", "event=index_deleted principal=api_key:"} {
			if !strings.Contains(log, want) {
				t.Errorf("no audit line with %q", want)
			}
		}
	})
}

// TestRevokedKeyStopsWithinTheCacheTTL: a key revoked on one coordinator
// is refused there at once, and by another coordinator that had it
// cached within that coordinator's cache TTL.
func TestRevokedKeyStopsWithinTheCacheTTL(t *testing.T) {
	e := newSecureEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = time.Second
	files := tlsFiles(e.c.TLSDir)
	src := loadTLS(t, files)
	etcd, err := clientv3.New(clientv3.Config{Endpoints: e.c.EtcdEndpoints(), TLS: src.ClientConfig(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	second, err := coordinator.New(coordinator.Config{ID: "coordinator-2", Listen: "127.0.0.1:0", Etcd: etcd, TLS: src,
		Auth: &auth.Config{CacheTTL: ttl}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer second.Stop()

	k, err := sluicev1.NewAuthClient(e.admin.Conn()).CreateApiKey(ctx, &sluicev1.CreateApiKeyRequest{Name: "short", Roles: []string{"monitor"}})
	if err != nil {
		t.Fatal(err)
	}
	here, there := e.client(t, e.c.Addr(), k.Encoded), e.client(t, second.Addr(), k.Encoded)
	for _, cl := range []*client.Client{here, there} {
		if _, err := cl.ClusterState(ctx, &sluicev1.ClusterStateRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sluicev1.NewAuthClient(e.admin.Conn()).RevokeApiKey(ctx, &sluicev1.RevokeApiKeyRequest{Id: k.Key.Id}); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	_, err = here.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
	wantCode(t, err, codes.Unauthenticated, "invalid API key")
	for {
		_, err := there.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
		if status.Code(err) == codes.Unauthenticated {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(revoked) > ttl+500*time.Millisecond {
			t.Fatalf("revoked key still works on the other coordinator %v after revocation (cache TTL %v)", time.Since(revoked), ttl)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUnauthenticatedBulkTakesNoBudget: a bulk without credentials is
// refused UNAUTHENTICATED before the coordinator admits it into its bulk
// budget, so it holds none of it — even with the budget full, when an
// authenticated bulk is refused RESOURCE_EXHAUSTED.
func TestUnauthenticatedBulkTakesNoBudget(t *testing.T) {
	e := newSecureEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	budget := e.c.Coordinator.DataPath().BulkBudget()
	// Fill the budget: an admitted BulkStream holds room for the largest
	// request until it ends, so hold some open without sending.
	hold, release := context.WithCancel(ctx)
	defer release()
	for budget.Used() < budget.Limit() {
		before := budget.Used()
		if _, err := e.admin.BulkStream(hold); err != nil {
			t.Fatal(err)
		}
		for budget.Used() == before {
			if ctx.Err() != nil {
				t.Fatalf("a held BulkStream took no budget (%d of %d used)", before, budget.Limit())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	large := &sluicev1.BulkRequest{Index: "books", Items: []*sluicev1.BulkItem{{Action: sluicev1.BulkAction_BULK_ACTION_INDEX,
		Id: "1", Source: []byte(`{"body":"` + strings.Repeat("x", 4<<20) + `"}`)}}}
	_, err := e.admin.Bulk(ctx, large)
	wantCode(t, err, codes.ResourceExhausted, "")
	anon := e.client(t, e.c.Addr(), "")
	_, err = anon.Bulk(ctx, large)
	wantCode(t, err, codes.Unauthenticated, "no credentials")
	bad := e.client(t, e.c.Addr(), "made-up:secret")
	s, err := bad.BulkStream(ctx)
	if err == nil {
		_, err = s.CloseAndRecv()
	}
	wantCode(t, err, codes.Unauthenticated, "invalid API key")
	if used := budget.Used(); used != budget.Limit() {
		t.Fatalf("budget %d of %d used after refused bulks", used, budget.Limit())
	}
	if !strings.Contains(e.log.String(), "method=/sluice.v1.Sluice/Bulk ") {
		t.Errorf("no audit line for the refused bulk:\n%s", e.log.String())
	}
}

// TestEveryRPCRefusesCallersWithoutCredentials calls every method of every
// service the coordinator and a data node serve, with no API key and no
// client certificate, and expects each refused: UNAUTHENTICATED from the
// coordinator (but the health service, open by configuration), a failed
// handshake from the data node.
func TestEveryRPCRefusesCallersWithoutCredentials(t *testing.T) {
	e := newSecureEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	joined, err := joinNode(ctx, t, e.c, "joined", tlsFiles(e.c.TLSDir))
	if err != nil {
		t.Fatal(err)
	}
	anon := e.client(t, e.c.Addr(), "")
	nodeConn, err := grpc.NewClient(joined.Addr(), e.ca.DialOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer nodeConn.Close()
	for _, target := range []struct {
		conn     grpc.ClientConnInterface
		services []service
		want     []codes.Code
		open     string
	}{
		{anon.Conn(), servicesOf(t, e.c.Coordinator.Services()), []codes.Code{codes.Unauthenticated}, "grpc.health.v1.Health"},
		{nodeConn, servicesOf(t, joined.Services()), []codes.Code{codes.Unavailable}, ""},
	} {
		for _, svc := range target.services {
			if svc.name == target.open {
				continue
			}
			for _, m := range svc.methods {
				t.Run(m, func(t *testing.T) {
					cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
					defer ccancel()
					s, err := target.conn.NewStream(cctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, m)
					if err == nil {
						_ = s.SendMsg(&emptypb.Empty{})
						_ = s.CloseSend()
						err = s.RecvMsg(&emptypb.Empty{})
					}
					code := status.Code(err)
					if code != target.want[0] {
						t.Fatalf("%s answered %v without credentials, want %v", m, err, target.want[0])
					}
				})
			}
		}
	}
}

type service struct {
	name    string
	methods []string
}

// servicesOf lists the methods of the services a server registered,
// checking they are known descriptors (so nothing is skipped unseen).
func servicesOf(t *testing.T, infos map[string]grpc.ServiceInfo) []service {
	t.Helper()
	var out []service
	for name, info := range infos {
		if _, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name)); err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		s := service{name: name}
		for _, m := range info.Methods {
			s.methods = append(s.methods, "/"+name+"/"+m.Name)
		}
		out = append(out, s)
	}
	if len(out) < 2 {
		t.Fatalf("only %d services", len(out))
	}
	return out
}

// TestKeysFile: a coordinator honours the API keys and roles of its keys
// file (as the Helm chart bootstraps its admin and operator keys), knowing
// only the SHA-256 of each secret; a key removed from the file stops
// working within a second or so; a file that does not load is refused at
// start, and, once serving, leaves the previous one in force.
func TestKeysFile(t *testing.T) {
	e := newSecureEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id, secret = "opkey1", "s3cr3t-0f-the-0perat0r"
	sum := sha256.Sum256([]byte(secret))
	file := filepath.Join(t.TempDir(), "keys.json")
	write := func(body string) {
		t.Helper()
		// A new size and modification time, as a re-mounted secret has.
		if err := os.WriteFile(file+".tmp", []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	withKey := `{"roles": [{"name": "ops", "indices": ["ops-*:manage"]}],
	  "keys": [{"id": "` + id + `", "name": "operator", "roles": ["ops"], "secretSha256": "` + hex.EncodeToString(sum[:]) + `"}]}`
	write(withKey)

	src := loadTLS(t, tlsFiles(e.c.TLSDir))
	etcd, err := clientv3.New(clientv3.Config{Endpoints: e.c.EtcdEndpoints(), TLS: src.ClientConfig(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	start := func(keysFile string) (*coordinator.Coordinator, error) {
		c, err := coordinator.New(coordinator.Config{ID: "coordinator-file", Listen: "127.0.0.1:0", Etcd: etcd, TLS: src,
			Auth: &auth.Config{KeysFile: keysFile}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			c.Stop()
			return nil, err
		}
		return c, nil
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"keys": [{"id": "x", "name": "x", "roles": ["admin"], "secretSha256": "not hex"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := start(bad); err == nil || !strings.Contains(err.Error(), "keys[0].secretSha256") {
		t.Fatalf("a keys file with a bad hash: start error %v, want one naming keys[0].secretSha256", err)
	}
	c, err := start(file)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	op := e.client(t, c.Addr(), id+":"+secret)
	if _, err := op.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "ops-1", Settings: &sluicev1.IndexSettings{NumberOfShards: 1}}); err != nil {
		t.Fatalf("the file's key creates an index its file role manages: %v", err)
	}
	_, err = op.CreateIndex(ctx, &sluicev1.CreateIndexRequest{Name: "books"})
	wantCode(t, err, codes.PermissionDenied, "manage")
	_, err = e.client(t, c.Addr(), id+":wrong-secret").ClusterState(ctx, &sluicev1.ClusterStateRequest{})
	wantCode(t, err, codes.Unauthenticated, "invalid API key")
	// The etcd keys still work beside the file's.
	if _, err := e.client(t, c.Addr(), e.c.AdminKey).ClusterState(ctx, &sluicev1.ClusterStateRequest{}); err != nil {
		t.Fatal(err)
	}

	// A broken file keeps the loaded one in force.
	write(`{"keys": [`)
	time.Sleep(auth.FileCheckInterval + 100*time.Millisecond)
	if _, err := op.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "ops-1"}); err != nil {
		t.Fatalf("after a broken keys file: %v", err)
	}
	// Removed from the file: refused within the check interval.
	write(`{"roles": [], "keys": []}`)
	removed := time.Now()
	for {
		_, err := op.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: "ops-1"})
		if status.Code(err) == codes.Unauthenticated {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(removed) > 2*auth.FileCheckInterval+500*time.Millisecond {
			t.Fatalf("a key removed from the keys file still works %v later", time.Since(removed))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
