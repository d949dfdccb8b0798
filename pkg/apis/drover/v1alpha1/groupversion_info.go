// Package v1alpha1 is the drover.dev/v1alpha1 API: the TrainingJob custom
// resource that users submit and the drover scheduler runs.
//
// The CRD YAML in config/crd is generated from these types by
// controller-gen (`make generate`); the markers below carry the OpenAPI and
// CEL validation so that the API server itself refuses a bad spec with a
// message naming the field.
//
// +kubebuilder:object:generate=true
// +groupName=drover.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of this package.
var GroupVersion = schema.GroupVersion{Group: "drover.dev", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &TrainingJob{}, &TrainingJobList{})
	metav1AddToGroupVersion(s)
	return nil
}
