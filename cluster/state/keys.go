package state

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultPrefix is where a cluster's keys live unless configured otherwise.
const DefaultPrefix = "/sluice/"

// Keys builds the etcd keys of one cluster (DESIGN.md, "Cluster state in
// etcd"). Prefix ends with "/".
type Keys struct {
	Prefix string
}

// NewKeys returns the keys under prefix ("" means DefaultPrefix); a missing
// trailing slash is added.
func NewKeys(prefix string) Keys {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Keys{Prefix: prefix}
}

// Node is nodes/<id>: a data node's registration, attached to its lease.
func (k Keys) Node(id string) string { return k.Prefix + "nodes/" + id }

// Nodes is the prefix of every node key.
func (k Keys) Nodes() string { return k.Prefix + "nodes/" }

// Index is indices/<name>: an index's metadata.
func (k Keys) Index(name string) string { return k.Prefix + "indices/" + name }

// Indices is the prefix of every index key.
func (k Keys) Indices() string { return k.Prefix + "indices/" }

// Shard is routing/<index-uuid>/<shard>: where one shard lives.
func (k Keys) Shard(uuid string, shard int) string {
	return k.Prefix + "routing/" + uuid + "/" + strconv.Itoa(shard)
}

// IndexRouting is the prefix of one index's routing keys.
func (k Keys) IndexRouting(uuid string) string { return k.Prefix + "routing/" + uuid + "/" }

// Routing is the prefix of every routing key.
func (k Keys) Routing() string { return k.Prefix + "routing/" }

// Alias is aliases/<alias>: the indices an alias points to.
func (k Keys) Alias(name string) string { return k.Prefix + "aliases/" + name }

// Aliases is the prefix of every alias key.
func (k Keys) Aliases() string { return k.Prefix + "aliases/" }

// Task is tasks/<id>: a persistent task (reindex).
func (k Keys) Task(id string) string { return k.Prefix + "tasks/" + id }

// Tasks is the prefix of every task key.
func (k Keys) Tasks() string { return k.Prefix + "tasks/" }

// Pin is pins/<task-id>: the shards a running task pins in place
// (statev1.ShardPins).
func (k Keys) Pin(taskID string) string { return k.Prefix + "pins/" + taskID }

// Pins is the prefix of every pin key.
func (k Keys) Pins() string { return k.Prefix + "pins/" }

// ClusterName is cluster/name: the cluster's name, written once by the
// first coordinator.
func (k Keys) ClusterName() string { return k.Prefix + "cluster/name" }

// Settings is cluster/settings: the cluster-wide allocation settings.
func (k Keys) Settings() string { return k.Prefix + "cluster/settings" }

// Election is election/allocator: the allocator election's prefix.
func (k Keys) Election() string { return k.Prefix + "election/allocator" }

// keyKind classifies a key under the prefix.
type keyKind int

const (
	kindOther keyKind = iota
	kindNode
	kindIndex
	kindShard
	kindAlias
	kindSettings
	kindPin
)

// parse splits a key into its kind and parts: the node id, index name or
// alias; for a shard the index uuid and shard number.
func (k Keys) parse(key string) (kind keyKind, name string, shard int, err error) {
	rest, ok := strings.CutPrefix(key, k.Prefix)
	if !ok {
		return kindOther, "", 0, nil
	}
	dir, name, ok := strings.Cut(rest, "/")
	if !ok || name == "" {
		return kindOther, "", 0, nil
	}
	switch dir {
	case "nodes":
		return kindNode, name, 0, nil
	case "indices":
		return kindIndex, name, 0, nil
	case "aliases":
		return kindAlias, name, 0, nil
	case "pins":
		return kindPin, name, 0, nil
	case "cluster":
		if name == "settings" {
			return kindSettings, name, 0, nil
		}
	case "routing":
		uuid, num, ok := strings.Cut(name, "/")
		if !ok {
			return kindOther, "", 0, fmt.Errorf("routing key %q: no shard number", key)
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			return kindOther, "", 0, fmt.Errorf("routing key %q: bad shard number", key)
		}
		return kindShard, uuid, n, nil
	}
	return kindOther, "", 0, nil
}
