package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The package depends on k8s.io/apimachinery only, so that clients can import
// the types without pulling in controller-runtime.
var (
	// GroupVersion is the API group and version of the Sluice resources.
	GroupVersion = schema.GroupVersion{Group: "sluice.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Sluice types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the Sluice types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Index{}, &IndexList{}, &Reindex{}, &ReindexList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
