package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/cluster/etcdtest"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestClusterName: the first coordinator names the cluster; later ones
// report that name, and one that names another cluster does not start.
func TestClusterName(t *testing.T) {
	etcd := etcdtest.New(t)
	ctx := context.Background()
	start := func(name, prefix string) (string, error) {
		t.Helper()
		c, err := New(Config{Listen: "127.0.0.1:0", Etcd: etcd, Prefix: prefix, ClusterName: name, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Stop)
		if err := c.Start(ctx); err != nil {
			return "", err
		}
		cl, err := client.Connect(ctx, c.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		h, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := cl.ClusterState(ctx, &sluicev1.ClusterStateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if h.ClusterName != st.ClusterName {
			t.Errorf("health says %q, state %q", h.ClusterName, st.ClusterName)
		}
		return h.ClusterName, nil
	}
	for _, tc := range []struct {
		name, prefix, want, err string
	}{
		{name: "search-prod", prefix: "/a/", want: "search-prod"},
		{name: "", prefix: "/a/", want: "search-prod"},
		{name: "search-prod", prefix: "/a/", want: "search-prod"},
		{name: "search-dev", prefix: "/a/", err: `coordinator: cluster name mismatch: this cluster (/a/cluster/name in etcd) is named "search-prod", not "search-dev"; start the coordinator without a name or with "search-prod"`},
		// Another prefix is another cluster; unnamed, it gets the default.
		{name: "", prefix: "/b/", want: DefaultClusterName},
		{name: "", prefix: "/b/", want: DefaultClusterName},
	} {
		got, err := start(tc.name, tc.prefix)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err || !errors.Is(err, ErrClusterName) {
				t.Errorf("%q on %s: %v, want %q", tc.name, tc.prefix, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("%q on %s: %q, %v, want %q", tc.name, tc.prefix, got, err, tc.want)
		}
	}
}
