package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ReindexSource is where documents are read from.
type ReindexSource struct {
	// Index is the source index or alias.
	// +required
	Index IndexName `json:"index"`

	// Query selects the documents to copy, in the Elasticsearch query DSL
	// (what Elasticsearch's "query" holds), such as {"term": {"status":
	// "published"}}: match_all, match, match_phrase, term, terms, range,
	// bool and ids, in their short and long forms, as "sluice search
	// --query" takes it. Anything else is refused, naming where it is. All
	// documents when unset.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Query *runtime.RawExtension `json:"query,omitempty"`
}

// ReindexDestination is where documents are written to.
type ReindexDestination struct {
	// Index is the destination index. Without create it must already exist
	// (for example, managed by an Index resource).
	// +required
	Index IndexName `json:"index"`

	// Create, when set, makes the reindex create the destination index with
	// these parameters; the index must not exist yet. Choose a shard count
	// that the source's is a multiple or divisor of, and shards can be
	// copied node-locally (mode local).
	// +optional
	Create *IndexParameters `json:"create,omitempty"`

	// Routing is how copied documents are routed, as Elasticsearch's
	// dest.routing: "keep" (the default) routes each document by the
	// routing it was indexed with and stores it; "discard" routes by _id
	// and stores none; "=value" routes and stores every document with value.
	// +kubebuilder:validation:XValidation:rule="self == 'keep' || self == 'discard' || (self.startsWith('=') && size(self) > 1)",message="must be keep, discard or =value"
	// +optional
	Routing string `json:"routing,omitempty"`
}

// ReindexMode chooses how documents travel from source to destination.
// +kubebuilder:validation:Enum=auto;local;remote;baseline
type ReindexMode string

const (
	// ReindexModeAuto copies locally where the shard layouts allow it and
	// streams node to node otherwise.
	ReindexModeAuto ReindexMode = "auto"
	// ReindexModeLocal places each destination shard on the node of its
	// source shard and copies in-process; fails if the layouts do not allow
	// it.
	ReindexModeLocal ReindexMode = "local"
	// ReindexModeRemote streams documents node to node in binary batches.
	ReindexModeRemote ReindexMode = "remote"
	// ReindexModeBaseline reads with scroll and writes with bulk through a
	// coordinator, like Elasticsearch's reindex API; for comparison.
	ReindexModeBaseline ReindexMode = "baseline"
)

// ReindexCopyMethod chooses what a local reindex copies.
// +kubebuilder:validation:Enum=auto;segments;documents
type ReindexCopyMethod string

const (
	// ReindexCopyAuto copies segments when the reindex allows it (local
	// mode, an empty destination with the source's mapping, routing kept,
	// no query, maxDocs, throttle or extra slices) and documents otherwise.
	ReindexCopyAuto ReindexCopyMethod = "auto"
	// ReindexCopySegments links the source shards' segments into their
	// co-located destination shards, re-analysing nothing; a reindex that
	// does not allow it is rejected.
	ReindexCopySegments ReindexCopyMethod = "segments"
	// ReindexCopyDocuments re-indexes every document.
	ReindexCopyDocuments ReindexCopyMethod = "documents"
)

// ConflictsPolicy says what a reindex does on a version conflict.
// +kubebuilder:validation:Enum=abort;proceed
type ConflictsPolicy string

const (
	// ConflictsAbort fails the reindex on the first version conflict.
	ConflictsAbort ConflictsPolicy = "abort"
	// ConflictsProceed counts version conflicts and carries on.
	ConflictsProceed ConflictsPolicy = "proceed"
)

// ReindexSpec is the desired reindex. Only requestsPerSecond can change once
// it is created (a rethrottle); to change anything else, create a new
// Reindex. Deleting the resource cancels a running reindex.
//
// +kubebuilder:validation:XValidation:rule="self.source.index != self.destination.index",message="must differ from source.index",fieldPath=".destination.index",reason="FieldValueInvalid"
// +kubebuilder:validation:XValidation:rule="!has(self.swapAlias) || (self.swapAlias != self.source.index && self.swapAlias != self.destination.index)",message="must differ from the source and destination index names",fieldPath=".swapAlias",reason="FieldValueInvalid"
// +kubebuilder:validation:XValidation:rule="has(self.swapAlias) == has(oldSelf.swapAlias)",message="is immutable",fieldPath=".swapAlias",reason="FieldValueInvalid"
// +kubebuilder:validation:XValidation:rule="has(self.maxDocs) == has(oldSelf.maxDocs)",message="is immutable",fieldPath=".maxDocs",reason="FieldValueInvalid"
type ReindexSpec struct {
	// Source is the index (and optional query) to read.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +required
	Source ReindexSource `json:"source"`

	// Destination is the index to write, optionally created by the
	// reindex.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +required
	Destination ReindexDestination `json:"destination"`

	// Slices is how many parallel slices the reindex runs: a number from 1
	// to 1024, or "auto" for one slice per source shard.
	// +kubebuilder:default="auto"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 1 && self <= 1024) : self == 'auto'",message="must be a number from 1 to 1024 or \"auto\""
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +optional
	Slices *intstr.IntOrString `json:"slices,omitempty"`

	// RequestsPerSecond throttles the reindex to about this many documents
	// per second across all slices; 0 or unset runs unthrottled. It is the
	// one field that can change while the reindex runs (a rethrottle).
	// +kubebuilder:validation:Minimum=0
	// +optional
	RequestsPerSecond *int32 `json:"requestsPerSecond,omitempty"`

	// Mode is how documents travel: auto, local, remote or baseline.
	// +kubebuilder:default=auto
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +optional
	Mode ReindexMode `json:"mode,omitempty"`

	// CopyMethod is what a local reindex copies: auto, segments or
	// documents.
	// +kubebuilder:default=auto
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +optional
	CopyMethod ReindexCopyMethod `json:"copyMethod,omitempty"`

	// SwapAlias, when set, names an alias that is moved to the destination
	// (from whatever it pointed at, typically the source) in one atomic
	// step after the reindex succeeded and the counts were verified.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +optional
	SwapAlias *IndexName `json:"swapAlias,omitempty"`

	// MaxDocs stops the reindex after this many documents; all when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +optional
	MaxDocs *int64 `json:"maxDocs,omitempty"`

	// Conflicts is what to do on a version conflict in the destination:
	// abort (the default) or proceed (count it and carry on).
	// +kubebuilder:default=abort
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="is immutable"
	// +optional
	Conflicts ConflictsPolicy `json:"conflicts,omitempty"`
}

// ReindexPhase is where a reindex is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Cancelled
type ReindexPhase string

const (
	// ReindexPending: accepted, no task started yet.
	ReindexPending ReindexPhase = "Pending"
	// ReindexRunning: the task is copying documents.
	ReindexRunning ReindexPhase = "Running"
	// ReindexSucceeded: all documents copied and the counts verified.
	ReindexSucceeded ReindexPhase = "Succeeded"
	// ReindexFailed: the task stopped on an error.
	ReindexFailed ReindexPhase = "Failed"
	// ReindexCancelled: the task was cancelled before it finished.
	ReindexCancelled ReindexPhase = "Cancelled"
)

// ReindexCounts are the document counters of a reindex or of one slice,
// named as in Elasticsearch's reindex response.
type ReindexCounts struct {
	// Total is the number of documents to process.
	// +optional
	Total int64 `json:"total,omitempty"`
	// Created is the number of documents created in the destination.
	// +optional
	Created int64 `json:"created,omitempty"`
	// Updated is the number of documents that replaced an existing one.
	// +optional
	Updated int64 `json:"updated,omitempty"`
	// Deleted is the number of documents deleted.
	// +optional
	Deleted int64 `json:"deleted,omitempty"`
	// VersionConflicts is the number of version conflicts met.
	// +optional
	VersionConflicts int64 `json:"versionConflicts,omitempty"`
	// Failures is the number of documents that could not be written.
	// +optional
	Failures int64 `json:"failures,omitempty"`
}

// ReindexSliceStatus is the progress of one slice.
type ReindexSliceStatus struct {
	// ID is the slice number, from 0.
	// +kubebuilder:validation:Minimum=0
	ID int32 `json:"id"`

	ReindexCounts `json:",inline"`

	// Copied is the number of documents the slice has copied so far (as
	// of its last checkpoint); the cluster reports per-slice progress as
	// total and copied.
	// +optional
	Copied int64 `json:"copied,omitempty"`

	// Done is true when the slice has finished.
	// +optional
	Done bool `json:"done,omitempty"`

	// CopyMethod is what the slice copied: segments or documents.
	// +optional
	CopyMethod ReindexCopyMethod `json:"copyMethod,omitempty"`
}

// ReindexStatus is the observed state of a Reindex.
type ReindexStatus struct {
	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Phase is Pending, Running, Succeeded, Failed or Cancelled.
	// +optional
	Phase ReindexPhase `json:"phase,omitempty"`

	// TaskID identifies the reindex task in the cluster; the operator
	// follows the same task across its own restarts.
	// +optional
	TaskID string `json:"taskID,omitempty"`

	// Counts over all slices.
	ReindexCounts `json:",inline"`

	// Progress is the share of total documents processed, such as "42%",
	// for display.
	// +optional
	Progress string `json:"progress,omitempty"`

	// DocsPerSecond is the recent copy rate.
	// +optional
	DocsPerSecond int64 `json:"docsPerSecond,omitempty"`

	// CopyMethod is what the reindex copies: segments or documents.
	// +optional
	CopyMethod ReindexCopyMethod `json:"copyMethod,omitempty"`

	// CopyMethodReason says why it copies documents although auto asked
	// for segments.
	// +optional
	CopyMethodReason string `json:"copyMethodReason,omitempty"`

	// Slices is the progress of every slice.
	// +listType=map
	// +listMapKey=id
	// +optional
	Slices []ReindexSliceStatus `json:"slices,omitempty"`

	// StartTime is when the task started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the task finished (succeeded, failed or
	// cancelled).
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Reindex copies the documents of one index into another as a task in the
// cluster, and optionally swaps an alias to the destination when done.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=reindexes,singular=reindex,shortName=srx,categories=sluice
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.index`,priority=1
// +kubebuilder:printcolumn:name="Destination",type=string,JSONPath=`.spec.destination.index`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`
// +kubebuilder:printcolumn:name="Docs/s",type=integer,JSONPath=`.status.docsPerSecond`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Reindex struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ReindexSpec `json:"spec"`

	// +optional
	Status ReindexStatus `json:"status,omitempty"`
}

// ReindexList is a list of Reindex.
//
// +kubebuilder:object:root=true
type ReindexList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Reindex `json:"items"`
}
