package coordinator

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultClusterName names a cluster whose first coordinator was given no
// name.
const DefaultClusterName = "sluice"

// ErrClusterName is a coordinator started with a cluster name other than
// the one its cluster already has.
var ErrClusterName = errors.New("cluster name mismatch")

// claimClusterName settles the cluster's name once for all coordinators,
// as Elasticsearch's cluster.name: the first coordinator to start stores
// its name (want, or DefaultClusterName) at key; later ones read it. A
// coordinator that names a different cluster (want set and not the
// stored one) is refused: it was pointed at the wrong etcd or prefix, and
// must not serve, or allocate for, another cluster under a name of its
// own.
func claimClusterName(ctx context.Context, etcd *clientv3.Client, key, want string) (string, error) {
	name := want
	if name == "" {
		name = DefaultClusterName
	}
	resp, err := etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, name)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return "", fmt.Errorf("cluster name: %w", err)
	}
	if resp.Succeeded {
		return name, nil
	}
	stored := string(resp.Responses[0].GetResponseRange().Kvs[0].Value)
	if want != "" && want != stored {
		return "", fmt.Errorf("%w: this cluster (%s in etcd) is named %q, not %q; start the coordinator without a name or with %q",
			ErrClusterName, key, stored, want, stored)
	}
	return stored, nil
}
