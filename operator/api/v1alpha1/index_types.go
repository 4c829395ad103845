package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// IndexParameters are the properties an index is created with: its shard
// layout, mapping and settings. An Index declares them; a Reindex can declare
// them inline to create its destination.
//
// +kubebuilder:validation:XValidation:rule="!has(self.routingShards) || self.routingShards % self.shards == 0",message="must be a multiple of shards, so that a later split by an integer factor takes each destination shard's documents from exactly one source shard",fieldPath=".routingShards",reason="FieldValueInvalid"
type IndexParameters struct {
	// Shards is the number of primary shards. It cannot change after
	// creation: documents are placed by hashing into the routing shards, so
	// changing the layout means a reindex (or, later, a split).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable; reindex into a new index to change it"
	// +optional
	Shards int32 `json:"shards,omitempty"`

	// RoutingShards is the number of routing shards documents are hashed
	// into (Elasticsearch's number_of_routing_shards); a multiple of
	// shards. It bounds how far the index can later be split. When unset the
	// cluster chooses. It cannot be set, changed or removed after creation.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +optional
	RoutingShards *int32 `json:"routingShards,omitempty"`

	// Replicas is the number of replica copies of every shard, 0 to 32. It
	// may change on a live index: the cluster adds or removes copies, each
	// on a node without another copy of its shard; copies that find no node
	// stay unassigned and the index yellow. See docs/replication.md.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=32
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Mapping declares the fields, as an Elasticsearch mapping object, for
	// example {"properties": {"title": {"type": "text"}}}: dynamic (true,
	// false or strict) and properties, whose objects nest under their own
	// properties. Field types: text, keyword, long, double, date, boolean;
	// parameters: analyzer (text), index, doc_values (not text). Anything
	// else is refused, naming where it is; the cluster then checks analyzer
	// names and field names.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Mapping *runtime.RawExtension `json:"mapping,omitempty"`

	// Settings are the dynamic index settings; they can change at any time.
	// +kubebuilder:default={}
	// +optional
	Settings IndexSettings `json:"settings,omitempty"`
}

// IndexSettings are the settings of an index that can change while it lives.
type IndexSettings struct {
	// RefreshInterval is how often buffered documents become searchable:
	// a duration such as "1s" or "500ms", or "-1" to refresh only on demand.
	// +kubebuilder:default="1s"
	// +kubebuilder:validation:Pattern=`^(-1|([0-9]+(ms|s|m|h))+)$`
	// +optional
	RefreshInterval string `json:"refreshInterval,omitempty"`

	// MergeThrottleMBPerSec caps the write rate of background merges in MB/s,
	// so merges never starve refresh or search. When unset the cluster
	// throttles adaptively (Lucene's auto IO throttle).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MergeThrottleMBPerSec *int32 `json:"mergeThrottleMBPerSec,omitempty"`

	// Translog controls when acknowledged operations are durable.
	// +kubebuilder:default={}
	// +optional
	Translog TranslogSettings `json:"translog,omitempty"`
}

// TranslogDurability says when the translog is fsynced.
// +kubebuilder:validation:Enum=request;async
type TranslogDurability string

const (
	// TranslogDurabilityRequest fsyncs before acknowledging every request:
	// nothing acknowledged is lost in a crash.
	TranslogDurabilityRequest TranslogDurability = "request"
	// TranslogDurabilityAsync fsyncs on an interval: faster, but a crash can
	// lose up to one interval of acknowledged operations.
	TranslogDurabilityAsync TranslogDurability = "async"
)

// TranslogSettings control the durability of the translog.
//
// +kubebuilder:validation:XValidation:rule="!has(self.syncInterval) || self.durability == 'async'",message="only applies with durability async",fieldPath=".syncInterval",reason="FieldValueInvalid"
type TranslogSettings struct {
	// Durability is "request" (fsync before acknowledging) or "async"
	// (fsync every syncInterval).
	// +kubebuilder:default=request
	// +optional
	Durability TranslogDurability `json:"durability,omitempty"`

	// SyncInterval is how often an async translog is fsynced, such as "5s".
	// The cluster's default applies when unset.
	// +kubebuilder:validation:Pattern=`^([0-9]+(ms|s|m|h))+$`
	// +optional
	SyncInterval string `json:"syncInterval,omitempty"`
}

// DeletionPolicy says what happens to an index's data when its Index
// resource is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type DeletionPolicy string

const (
	// DeletionPolicyDelete deletes the index and its data from the cluster.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain leaves the index in the cluster; only the
	// Kubernetes resource goes away.
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// IndexSpec is the desired state of a Sluice index.
//
// +kubebuilder:validation:XValidation:rule="has(self.indexName) == has(oldSelf.indexName)",message="is immutable",fieldPath=".indexName",reason="FieldValueInvalid"
// +kubebuilder:validation:XValidation:rule="has(self.routingShards) == has(oldSelf.routingShards)",message="is immutable",fieldPath=".routingShards",reason="FieldValueInvalid"
type IndexSpec struct {
	// IndexName is the name of the index in the cluster; metadata.name when
	// unset. Set it for names Kubernetes does not allow as object names
	// (for example with '_'). It cannot change after creation.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +optional
	IndexName IndexName `json:"indexName,omitempty"`

	IndexParameters `json:",inline"`

	// Aliases are alias names made to point at this index when the index is
	// created or the name is added to the list. An alias that is later moved
	// to another index (typically by a Reindex's swapAlias, the blue/green
	// flow) is not taken back: the operator acts on changes to this list,
	// not on every alias that ever named the index.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Aliases []IndexName `json:"aliases,omitempty"`

	// DeletionPolicy is what happens to the index when this resource is
	// deleted: Delete removes the index and its data, Retain keeps it.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// IndexHealth is the health of an index as the cluster reports it, with the
// meanings of Elasticsearch, or unknown while the cluster cannot be reached.
// +kubebuilder:validation:Enum=green;yellow;red;unknown
type IndexHealth string

const (
	// IndexHealthUnknown: the operator cannot reach the cluster; the last
	// health it saw no longer holds.
	IndexHealthUnknown IndexHealth = "unknown"
	// IndexHealthGreen: all shard copies are assigned and started.
	IndexHealthGreen IndexHealth = "green"
	// IndexHealthYellow: all primaries are started, some replicas are not.
	IndexHealthYellow IndexHealth = "yellow"
	// IndexHealthRed: some primary is not started; some data is unavailable.
	IndexHealthRed IndexHealth = "red"
)

// IndexStatus is the observed state of an Index.
type IndexStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// IndexName is the name of the index in the cluster.
	// +optional
	IndexName string `json:"indexName,omitempty"`

	// UUID identifies the index in the cluster; a deleted and recreated
	// index of the same name has a new one.
	// +optional
	UUID string `json:"uuid,omitempty"`

	// Health is the index health: green, yellow or red; unknown while the
	// cluster is unreachable.
	// +optional
	Health IndexHealth `json:"health,omitempty"`

	// DocsCount is the number of searchable documents (as of the last
	// refresh).
	// +optional
	DocsCount int64 `json:"docsCount,omitempty"`

	// Shards is the number of primary shards in the cluster.
	// +optional
	Shards int32 `json:"shards,omitempty"`

	// RoutingShards is the number of routing shards in the cluster.
	// +optional
	RoutingShards int32 `json:"routingShards,omitempty"`

	// ActiveShards is the number of started shard copies.
	// +optional
	ActiveShards int32 `json:"activeShards,omitempty"`

	// Aliases are the aliases that point to the index, as of the last
	// reconcile: those of spec.aliases, minus any moved away since (a
	// Reindex's swapAlias), plus any added outside the resource.
	// +listType=set
	// +optional
	Aliases []string `json:"aliases,omitempty"`

	// AppliedAliases are the spec.aliases the operator last applied.
	// Comparing them with spec.aliases tells which names were added to or
	// removed from the list since, so an alias moved away by someone else
	// (a Reindex's swapAlias) is not taken back. Always written, empty
	// included: absent, it is read from aliases, which held this list
	// before this field existed.
	// +listType=set
	// +optional
	AppliedAliases []string `json:"appliedAliases"`
}

// Index is a Sluice index managed from Kubernetes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=indexes,singular=index,shortName=sidx,categories=sluice
// +kubebuilder:printcolumn:name="Index",type=string,JSONPath=`.status.indexName`,priority=1
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Docs",type=integer,JSONPath=`.status.docsCount`
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.spec.shards`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Index struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired index; every field has a default, so an Index
	// with only a name is a one-shard index named after it.
	// +kubebuilder:default={}
	// +optional
	Spec IndexSpec `json:"spec,omitempty"`

	// +optional
	Status IndexStatus `json:"status,omitempty"`
}

// ClusterIndexName is the name of the index in the cluster: spec.indexName,
// or metadata.name when that is unset.
func (in *Index) ClusterIndexName() string {
	if in.Spec.IndexName != "" {
		return string(in.Spec.IndexName)
	}
	return in.Name
}

// IndexList is a list of Index.
//
// +kubebuilder:object:root=true
type IndexList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Index `json:"items"`
}
