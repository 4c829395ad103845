package v1alpha1

// IndexName is the name of a Sluice index or alias. The rules are
// Elasticsearch's, so names users bring from Elasticsearch or OpenSearch keep
// working and names that would break URLs, paths or wildcard expressions are
// refused before they reach the cluster.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=255
// +kubebuilder:validation:XValidation:rule=`!self.matches(r'\p{Lu}')`,message="must be lowercase"
// +kubebuilder:validation:XValidation:rule=`!self.matches(r'^[-_+]')`,message="must not start with '-', '_' or '+'"
// +kubebuilder:validation:XValidation:rule=`!self.matches(r'[\\/*?"<>|,# :]')`,message="must not contain '\\', '/', '*', '?', '\"', '<', '>', '|', ',', '#', ':' or a space"
// +kubebuilder:validation:XValidation:rule=`self != '.' && self != '..'`,message="must not be '.' or '..'"
// +kubebuilder:validation:XValidation:rule=`bytes(self).size() <= 255`,message="must be at most 255 bytes long"
type IndexName string

// Condition types shared by Index and Reindex, with the meanings of the
// Kubernetes API conventions.
const (
	// ConditionReady is True when the resource's desired state is in effect:
	// an Index exists in the cluster with the spec applied; a Reindex has
	// succeeded.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the operator or the cluster is
	// working towards the spec: creating an index, applying settings,
	// running a reindex task.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something is wrong that the operator
	// cannot fix by itself: the cluster refused a change, the index health
	// is red, a reindex task recorded failures.
	ConditionDegraded = "Degraded"
)
